<?php
// A stand-in for a shop's webhook endpoint, run by PHP's built-in server:
//   GF_RECEIVER_LOG=/tmp/hooks.jsonl php -S 127.0.0.1:PORT receiver.php
// Every request is appended to GF_RECEIVER_LOG as one JSON line (method, URI, headers,
// the raw body exactly as received, base64 so no byte is changed) and answered as
// WooCommerce's WC_API answers a webhook: 200 with the body "-1".
declare(strict_types=1);

$log = getenv('GF_RECEIVER_LOG') ?: (sys_get_temp_dir() . '/gf-receiver.jsonl');
$raw = (string) file_get_contents('php://input');
$entry = [
    'time' => microtime(true),
    'method' => $_SERVER['REQUEST_METHOD'] ?? '',
    'uri' => $_SERVER['REQUEST_URI'] ?? '',
    'headers' => function_exists('getallheaders') ? getallheaders() : [],
    'body_b64' => base64_encode($raw),
];
file_put_contents($log, json_encode($entry, JSON_UNESCAPED_SLASHES) . "\n", FILE_APPEND | LOCK_EX);
http_response_code(200);
header('Content-Type: text/plain');
echo '-1';
return true;
