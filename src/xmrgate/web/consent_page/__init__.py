"""The consent page of shop plugins: ``/api-keys/authorize`` (docs/greenfield.md).

``page``: rendering (the steps, the auto-posting form); ``routes``: the GET and POST.
"""
