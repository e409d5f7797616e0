# shop.py: python3 shop.py, with PORT, ORDER_SECRET, WEBHOOK_SECRET and LOADER_URL set
import base64, hashlib, hmac, json, os, secrets, time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

PAGE = """<!doctype html><title>Checkout</title><script src="/blackbox-capture.umd.js"></script>
<script>BlackboxCapture.captureBlackbox({ loaderUrl: %s, post: { url: '/device-risk', headers: { 'Order-Token': %s } } });</script>
"""
b64url = lambda data: base64.urlsafe_b64encode(data).rstrip(b'=').decode()
sign = lambda key, data: hmac.new(key, data, hashlib.sha256).digest()


class Shop(BaseHTTPRequestHandler):
    def do_GET(self):  # the checkout page, with an order token: an HS256 JWT naming the order, valid 15 minutes
        if self.path != '/': return self.answer(404, b'')
        order = 'order-' + secrets.token_hex(8)
        claims = b64url(b'{"alg":"HS256","typ":"JWT"}') + '.' + b64url(json.dumps({'sub': order, 'exp': int(time.time()) + 900}).encode())
        token = claims + '.' + b64url(sign(os.environ['ORDER_SECRET'].encode(), claims.encode()))
        self.answer(200, (PAGE % (json.dumps(os.environ['LOADER_URL']), json.dumps(token))).encode())

    def do_POST(self):  # the decision, signed as Standard Webhooks say: refused unless fresh and signed
        body = self.rfile.read(int(self.headers.get('content-length', 0)))
        sent, stamp = self.headers.get('webhook-id', ''), self.headers.get('webhook-timestamp', '')
        key = base64.b64decode(os.environ['WEBHOOK_SECRET'].removeprefix('whsec_'))
        expected = 'v1,' + base64.b64encode(sign(key, f'{sent}.{stamp}.'.encode() + body)).decode()
        signed = any(hmac.compare_digest(expected, s) for s in self.headers.get('webhook-signature', '').split())
        if self.path != '/webhook' or not signed or not stamp.isdigit() or abs(time.time() - int(stamp)) > 300:
            return self.answer(401, b'refused')
        with open('decisions.jsonl', 'ab') as log: log.write(body + b'\n')  # yours: release or stop the order
        self.answer(204, b'')

    def answer(self, status, body):
        self.send_response(status); self.send_header('content-type', 'text/html; charset=utf-8'); self.end_headers(); self.wfile.write(body)


ThreadingHTTPServer(('127.0.0.1', int(os.environ['PORT'])), Shop).serve_forever()
