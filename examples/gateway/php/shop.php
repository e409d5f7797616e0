<?php
// shop.php: php -S 127.0.0.1:8000 shop.php, with ORDER_SECRET, WEBHOOK_SECRET and LOADER_URL set
function b64url(string $bytes): string { return rtrim(strtr(base64_encode($bytes), '+/', '-_'), '='); }

if ($_SERVER['REQUEST_METHOD'] === 'POST' && $_SERVER['REQUEST_URI'] === '/webhook') {
  // The decision, signed by the gateway as Standard Webhooks say: refuse it unless fresh and signed.
  $body = file_get_contents('php://input');
  $id = $_SERVER['HTTP_WEBHOOK_ID'] ?? '';
  $time = $_SERVER['HTTP_WEBHOOK_TIMESTAMP'] ?? '';
  $key = base64_decode(substr(getenv('WEBHOOK_SECRET'), strlen('whsec_')));
  $expected = 'v1,' . base64_encode(hash_hmac('sha256', "$id.$time.$body", $key, true));
  $signed = false;
  foreach (explode(' ', $_SERVER['HTTP_WEBHOOK_SIGNATURE'] ?? '') as $signature)
    $signed = hash_equals($expected, $signature) || $signed;
  if (!$signed || !ctype_digit($time) || abs(time() - (int) $time) > 300) {
    http_response_code(401);
    exit('refused');
  }
  file_put_contents('decisions.jsonl', $body . "\n", FILE_APPEND | LOCK_EX); // yours: release or stop the order
  http_response_code(204);
  exit;
}
if ($_SERVER['REQUEST_URI'] !== '/') { http_response_code(404); exit; }
// The order token: an HS256 JWT naming the order, valid for 15 minutes.
$order = 'order-' . bin2hex(random_bytes(8));
$claims = b64url('{"alg":"HS256","typ":"JWT"}') . '.' . b64url(json_encode(['sub' => $order, 'exp' => time() + 900]));
$token = $claims . '.' . b64url(hash_hmac('sha256', $claims, getenv('ORDER_SECRET'), true));
?>
<!doctype html><title>Checkout</title>
<script src="/blackbox-capture.umd.js" data-loader-url="<?= htmlspecialchars(getenv('LOADER_URL')) ?>"
        data-post-url="/device-risk" data-order-token="<?= $token ?>"></script>
