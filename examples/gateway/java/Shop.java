// Shop.java: java Shop.java, with PORT, ORDER_SECRET, WEBHOOK_SECRET and LOADER_URL set
import static java.nio.charset.StandardCharsets.UTF_8;
import static java.nio.file.StandardOpenOption.*;

import com.sun.net.httpserver.*;
import java.net.InetSocketAddress;
import java.nio.file.*;
import java.security.*;
import java.util.*;
import javax.crypto.Mac;
import javax.crypto.spec.SecretKeySpec;

public class Shop {
  static final String PAGE = """
    <!doctype html><title>Checkout</title><script src="/blackbox-capture.umd.js"></script>
    <script>BlackboxCapture.captureBlackbox({ loaderUrl: "%s", post: { url: '/device-risk', headers: { 'Order-Token': "%s" } } });</script>""";

  static byte[] sign(byte[] key, String data) {
    try {
      Mac mac = Mac.getInstance("HmacSHA256");
      mac.init(new SecretKeySpec(key, "HmacSHA256"));
      return mac.doFinal(data.getBytes(UTF_8));
    } catch (GeneralSecurityException e) { throw new IllegalStateException(e); }
  }

  // The checkout page, with an order token: an HS256 JWT naming the order, valid 15 minutes.
  static String page() {
    var b64url = Base64.getUrlEncoder().withoutPadding();
    String claims = b64url.encodeToString("{\"alg\":\"HS256\",\"typ\":\"JWT\"}".getBytes(UTF_8)) + "." + b64url.encodeToString(
      ("{\"sub\":\"order-" + UUID.randomUUID() + "\",\"exp\":" + (System.currentTimeMillis() / 1000 + 900) + "}").getBytes(UTF_8));
    String token = claims + "." + b64url.encodeToString(sign(System.getenv("ORDER_SECRET").getBytes(UTF_8), claims));
    return PAGE.formatted(System.getenv("LOADER_URL"), token);
  }

  // The decision, signed as Standard Webhooks say: refused unless fresh and signed.
  static boolean verified(Headers headers, String body) {
    String id = Objects.toString(headers.getFirst("webhook-id"), ""), stamp = Objects.toString(headers.getFirst("webhook-timestamp"), "");
    byte[] key = Base64.getDecoder().decode(System.getenv("WEBHOOK_SECRET").replaceFirst("^whsec_", ""));
    byte[] expected = ("v1," + Base64.getEncoder().encodeToString(sign(key, id + "." + stamp + "." + body))).getBytes(UTF_8);
    boolean signed = Arrays.stream(Objects.toString(headers.getFirst("webhook-signature"), "").split(" "))
      .anyMatch(signature -> MessageDigest.isEqual(expected, signature.getBytes(UTF_8)));
    return signed && stamp.matches("\\d{1,12}") && Math.abs(System.currentTimeMillis() / 1000 - Long.parseLong(stamp)) <= 300;
  }

  public static void main(String[] args) throws Exception {
    var server = HttpServer.create(new InetSocketAddress("127.0.0.1", Integer.parseInt(System.getenv("PORT"))), 0);
    server.createContext("/", exchange -> {
      String body = new String(exchange.getRequestBody().readAllBytes(), UTF_8), path = exchange.getRequestURI().getPath();
      boolean webhook = path.equals("/webhook") && exchange.getRequestMethod().equals("POST"), ok = webhook && verified(exchange.getRequestHeaders(), body);
      if (ok) Files.writeString(Path.of("decisions.jsonl"), body + "\n", CREATE, APPEND); // yours: release or stop the order
      byte[] answer = (webhook ? (ok ? "" : "refused") : path.equals("/") ? page() : "").getBytes(UTF_8);
      exchange.getResponseHeaders().set("content-type", "text/html; charset=utf-8");
      exchange.sendResponseHeaders(webhook ? (ok ? 204 : 401) : path.equals("/") ? 200 : 404, answer.length == 0 ? -1 : answer.length);
      try (var out = exchange.getResponseBody()) { out.write(answer); }
    });
    server.start();
  }
}
