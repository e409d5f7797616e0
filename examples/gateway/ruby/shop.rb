# shop.rb: ruby shop.rb, with PORT, ORDER_SECRET, WEBHOOK_SECRET and LOADER_URL set
require 'base64'
require 'json'
require 'openssl'
require 'securerandom'
require 'socket'

PAGE = <<~HTML
  <!doctype html><title>Checkout</title><script src="/blackbox-capture.umd.js"></script>
  <script>BlackboxCapture.captureBlackbox({ loaderUrl: %s, post: { url: '/device-risk', headers: { 'Order-Token': %s } } });</script>
HTML
b64url = ->(data) { Base64.urlsafe_encode64(data, padding: false) }
sign = ->(key, data) { OpenSSL::HMAC.digest('SHA256', key, data) }

# The decision, signed as Standard Webhooks say: taken only when fresh and signed.
verified = lambda do |headers, body|
  id, stamp = headers['webhook-id'].to_s, headers['webhook-timestamp'].to_s
  key = Base64.decode64(ENV.fetch('WEBHOOK_SECRET').delete_prefix('whsec_'))
  expected = 'v1,' + Base64.strict_encode64(sign.(key, "#{id}.#{stamp}.#{body}"))
  signed = headers['webhook-signature'].to_s.split(' ').any? { |signature| OpenSSL.secure_compare(expected, signature) }
  signed && stamp.match?(/\A\d{1,12}\z/) && (Time.now.to_i - stamp.to_i).abs <= 300
end

server = TCPServer.new('127.0.0.1', Integer(ENV.fetch('PORT')))
loop do
  Thread.new(server.accept) do |client|
    method, path = client.gets.to_s.split
    headers = {}
    while (line = client.gets) && line != "\r\n"
      name, value = line.split(':', 2)
      headers[name.downcase] = value.to_s.strip
    end
    body = client.read(headers['content-length'].to_i)
    if method == 'POST' && path == '/webhook'
      ok = verified.(headers, body)
      File.open('decisions.jsonl', 'a') { |log| log.puts(body) } if ok # yours: release or stop the order
      status, answer = ok ? [204, ''] : [401, 'refused']
    elsif path == '/' # the checkout page, with an order token: an HS256 JWT naming the order, valid 15 minutes
      claims = b64url.('{"alg":"HS256","typ":"JWT"}') + '.' + b64url.(JSON.generate(sub: "order-#{SecureRandom.hex(8)}", exp: Time.now.to_i + 900))
      status, answer = 200, format(PAGE, ENV.fetch('LOADER_URL').to_json, (claims + '.' + b64url.(sign.(ENV.fetch('ORDER_SECRET'), claims))).to_json)
    else
      status, answer = 404, ''
    end
    client.write("HTTP/1.1 #{status} \r\ncontent-type: text/html; charset=utf-8\r\ncontent-length: #{answer.bytesize}\r\nconnection: close\r\n\r\n#{answer}")
    client.close
  end
end
