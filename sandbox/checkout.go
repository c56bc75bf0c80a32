package sandbox

import (
	"context"
	"errors"
	"fmt"
	"html/template"
	"net/http"
	"strings"
	"time"

	"github.com/bojanz/currency"
)

// page is the hosted checkout: what a provider's payment page shows, and
// the two ways out a drill needs (pay; pay but lose the webhook).
var page = template.Must(template.New("checkout").Parse(`<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>Sandbox checkout</title>
<meta name="viewport" content="width=device-width, initial-scale=1">
<style>body{font:16px system-ui,sans-serif;max-width:32rem;margin:3rem auto;padding:0 1rem}
.amount{font-size:2rem;font-weight:600}.note{color:#555}button{font-size:1rem;padding:.5rem 1rem;margin:.25rem 0}</style>
</head><body>
<h1>Sandbox checkout</h1>
<p class="note">This page stands in for a payment provider's. It moves no money.</p>
{{if .Payment}}
<p>Order <code id="order-no">{{.Payment.OrderNo}}</code></p>
<p class="amount" id="amount">{{.Amount}}</p>
<p>Status: <strong id="state">{{.Payment.State}}</strong>{{if .Open}} · pay by {{.Payment.ExpiresAt.Format "15:04:05 MST"}}{{end}}</p>
{{if .Message}}<p id="message" role="status">{{.Message}}</p>{{end}}
{{if .Open}}
<form method="post"><input type="hidden" name="action" value="pay"><button id="pay" type="submit">Pay {{.Amount}}</button></form>
<form method="post"><input type="hidden" name="action" value="lose"><button id="pay-lose" type="submit">Pay, but lose the webhook (drill)</button></form>
{{end}}
{{else}}<p id="message" role="status">No such payment.</p>{{end}}
<p><a id="back" href="/">Back to the shop</a></p>
</body></html>`))

type pageData struct {
	Payment *Payment
	Amount  string
	Open    bool
	Message string
}

// ServeHTTP serves the checkout page of the payment named by the last
// path element (GET) and pays it (POST action=pay, or action=lose to keep
// its webhook from being sent).
func (p *Provider) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	id := strings.TrimPrefix(r.URL.Path, CheckoutPath)
	if id == "" || strings.Contains(id, "/") || len(id) > 64 {
		http.NotFound(w, r)
		return
	}
	ctx, cancel := context.WithTimeout(r.Context(), 10*time.Second)
	defer cancel()
	var msg string
	status := http.StatusOK
	switch r.Method {
	case http.MethodGet, http.MethodHead:
	case http.MethodPost:
		r.Body = http.MaxBytesReader(w, r.Body, 1<<10)
		action := r.PostFormValue("action")
		if action != "pay" && action != "lose" {
			http.Error(w, `action must be "pay" or "lose"`, http.StatusBadRequest)
			return
		}
		code, err := p.Complete(ctx, id, action == "lose")
		switch {
		case errors.Is(err, ErrNotPayable):
			msg, status = "Not paid: "+err.Error()+".", http.StatusConflict
		case err != nil:
			msg, status = "The payment went through, but its webhook could not be delivered; the shop will learn of it at its deadline.", http.StatusBadGateway
		case action == "lose":
			msg = "Paid. The webhook was lost on purpose: the shop learns of the payment when it asks, at the deadline."
		case code != http.StatusOK:
			msg = fmt.Sprintf("Paid. The shop answered the webhook with %d; it learns of the payment at its deadline.", code)
		default:
			msg = "Paid. The shop has been told."
		}
	default:
		w.Header().Set("Allow", "GET, POST")
		http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
		return
	}
	pay, err := p.Payment(ctx, id)
	if err != nil {
		http.Error(w, "the sandbox cannot read its payments; retry", http.StatusServiceUnavailable)
		return
	}
	d := pageData{Payment: pay, Message: msg}
	if pay == nil {
		status = http.StatusNotFound
	} else {
		d.Amount = amount(pay)
		d.Open = pay.State == "OPEN" && p.now().Before(pay.ExpiresAt)
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(status)
	_ = page.Execute(w, d)
}

// amount is what the page asks for, in the currency's own minor unit
// (19.99 USD, but 1999 JPY: amounts count the smallest unit, as the
// providers do).
func amount(pay *Payment) string {
	if a, err := currency.NewAmountFromInt64(pay.AmountCents, strings.ToUpper(pay.Currency)); err == nil {
		return a.String()
	}
	return fmt.Sprintf("%d.%02d", pay.AmountCents/100, pay.AmountCents%100)
}
