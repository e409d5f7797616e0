// shop.go: go run shop.go, with PORT, ORDER_SECRET, WEBHOOK_SECRET and LOADER_URL set
package main

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"strconv"
	"strings"
	"time"
)

const page = `<!doctype html><title>Checkout</title><script src="/blackbox-capture.umd.js"></script>
<script>BlackboxCapture.captureBlackbox({ loaderUrl: %s, post: { url: '/device-risk', headers: { 'Order-Token': %s } } });</script>
`

func sign(key, data []byte) []byte {
	mac := hmac.New(sha256.New, key)
	mac.Write(data)
	return mac.Sum(nil)
}

func quote(value any) []byte { text, _ := json.Marshal(value); return text }

func main() {
	// The checkout page, with an order token: an HS256 JWT naming the order, valid 15 minutes.
	http.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		b64url, order := base64.RawURLEncoding.EncodeToString, fmt.Sprintf("order-%d", time.Now().UnixNano())
		claims := b64url([]byte(`{"alg":"HS256","typ":"JWT"}`)) + "." + b64url(quote(map[string]any{"sub": order, "exp": time.Now().Unix() + 900}))
		token := claims + "." + b64url(sign([]byte(os.Getenv("ORDER_SECRET")), []byte(claims)))
		fmt.Fprintf(w, page, quote(os.Getenv("LOADER_URL")), quote(token))
	})
	// The decision, signed as Standard Webhooks say: refused unless fresh and signed.
	http.HandleFunc("/webhook", func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		id, stamp := r.Header.Get("webhook-id"), r.Header.Get("webhook-timestamp")
		key, _ := base64.StdEncoding.DecodeString(strings.TrimPrefix(os.Getenv("WEBHOOK_SECRET"), "whsec_"))
		expected := []byte("v1," + base64.StdEncoding.EncodeToString(sign(key, []byte(id+"."+stamp+"."+string(body)))))
		signed := false
		for _, signature := range strings.Fields(r.Header.Get("webhook-signature")) {
			signed = hmac.Equal(expected, []byte(signature)) || signed
		}
		sent, err := strconv.ParseInt(stamp, 10, 64)
		if age := time.Now().Unix() - sent; !signed || err != nil || age > 300 || age < -300 {
			http.Error(w, "refused", http.StatusUnauthorized)
			return
		}
		log, _ := os.OpenFile("decisions.jsonl", os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644)
		log.Write(append(body, '\n')) // yours: release or stop the order
		log.Close()
		w.WriteHeader(http.StatusNoContent)
	})
	http.ListenAndServe("127.0.0.1:"+os.Getenv("PORT"), nil)
}
