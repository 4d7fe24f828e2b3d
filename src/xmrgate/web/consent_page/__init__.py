"""The consent page of shop plugins: ``/api-keys/authorize`` (issue 28 part 4, §1.A).

``page``: rendering (the steps, the auto-posting form); ``routes``: the GET and POST.
"""
