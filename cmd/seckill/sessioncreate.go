package main

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/seckill/seckill"
	"github.com/seckill/seckill/client"
)

// createCmd is `seckill session create`: a sale of one SKU (--sku,
// --price-cents, --stock) or of several items (--item, once per item).
func createCmd(admin func() (*client.Client, error)) *cobra.Command {
	var (
		s               seckill.Session
		mode            string
		start, end      string
		regFrom, regTil string
		items           []string
		sku, price      int64
		stock, ttl      int
		ticket, captcha bool
	)
	cmd := &cobra.Command{
		Use:   "create --title T --per-user-limit N --start-at T --end-at T (--sku N --price-cents N --stock N | --item SKU:PRICE:STOCK:TITLE …)",
		Short: "Create a sale: of one SKU, or of several items (sizes) with --item each, the per-user limit across them",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			for _, t := range []struct {
				flag, raw string
				to        *time.Time
			}{{"start-at", start, &s.StartAt}, {"end-at", end, &s.EndAt}, {"register-from", regFrom, &s.RegisterFrom}, {"register-until", regTil, &s.RegisterUntil}} {
				if t.raw == "" && strings.HasPrefix(t.flag, "register") {
					continue // the API's defaults: from now, until the start
				}
				v, err := time.Parse(time.RFC3339, t.raw)
				if err != nil {
					return fmt.Errorf("--%s must be an RFC 3339 time: %v", t.flag, err)
				}
				*t.to = v
			}
			s.Mode, s.RightTTLSeconds, s.RequireTicket, s.RequireCaptcha = seckill.SessionMode(mode), ttl, ticket, captcha
			if len(items) == 0 {
				s.SKUID, s.PriceCents, s.TotalStock = sku, price, stock
			} else {
				if sku != 0 || price != 0 || stock != 0 {
					return errors.New("give --item for each item, or --sku, --price-cents and --stock for one, not both")
				}
				parsed, err := parseItems(items)
				if err != nil {
					return err
				}
				s.SetItems(parsed)
			}
			cl, err := admin()
			if err != nil {
				return err
			}
			v, err := cl.CreateSession(cmd.Context(), &s)
			if err != nil {
				return err
			}
			return printJSON(cmd, v)
		},
	}
	f := cmd.Flags()
	f.StringVar(&s.Title, "title", "", "the sale's title")
	f.IntVar(&s.PerUserLimit, "per-user-limit", 1, "units one shopper may buy, across the sale's items")
	f.StringVar(&start, "start-at", "", "when the sale opens (RFC 3339)")
	f.StringVar(&end, "end-at", "", "when it ends (RFC 3339)")
	f.Int64Var(&sku, "sku", 0, "a single-SKU sale's SKU")
	f.Int64Var(&price, "price-cents", 0, "a single-SKU sale's price in cents")
	f.IntVar(&stock, "stock", 0, "a single-SKU sale's stock")
	f.StringArrayVar(&items, "item", nil, "an item of a sale of several, SKU:PRICE_CENTS:STOCK:TITLE (repeat per item)")
	f.StringVar(&s.Currency, "currency", "", "ISO 4217 code in lower case (default: the deployment's)")
	f.StringVar(&mode, "mode", "", "first_come (default), reserved or draw")
	f.IntVar(&ttl, "right-ttl-seconds", 0, "a draw's rights (default 600)")
	f.StringVar(&regFrom, "register-from", "", "a reserved or draw sale's registration opens (RFC 3339; default now)")
	f.StringVar(&regTil, "register-until", "", "and closes (RFC 3339; default --start-at)")
	f.BoolVar(&ticket, "require-ticket", false, "orders need a purchase ticket")
	f.BoolVar(&captcha, "require-captcha", false, "tickets need a solved captcha")
	return cmd
}

// parseItems reads --item values, SKU:PRICE_CENTS:STOCK:TITLE (the title
// last, so it may hold colons).
func parseItems(raw []string) ([]seckill.Item, error) {
	out := make([]seckill.Item, len(raw))
	for i, r := range raw {
		f := strings.SplitN(r, ":", 4)
		if len(f) != 4 {
			return nil, fmt.Errorf("--item %q: want SKU:PRICE_CENTS:STOCK:TITLE", r)
		}
		sku, err1 := strconv.ParseInt(f[0], 10, 64)
		price, err2 := strconv.ParseInt(f[1], 10, 64)
		stock, err3 := strconv.Atoi(f[2])
		if err := errors.Join(err1, err2, err3); err != nil {
			return nil, fmt.Errorf("--item %q: want SKU:PRICE_CENTS:STOCK:TITLE with integers: %v", r, err)
		}
		out[i] = seckill.Item{SKUID: sku, PriceCents: price, TotalStock: stock, Title: f[3]}
	}
	return out, nil
}
