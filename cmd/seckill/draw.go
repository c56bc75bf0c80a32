package main

import (
	"cmp"
	"fmt"
	"slices"
	"time"

	"github.com/spf13/cobra"

	"github.com/seckill/seckill"
	"github.com/seckill/seckill/internal/app"
	"github.com/seckill/seckill/mysql"
)

// drawCmd checks a draw from what it published. Like `seckill refunds`
// it needs MySQL only: the seed, the registrant list (the registrations
// made before register_until by the database's clock), its published
// count and digest, and the entries are all there.
func drawCmd() *cobra.Command {
	cmd := &cobra.Command{Use: "draw verify --session N", Short: "Check a draw sale's draw from its published seed"}
	var sessionID, user int64
	verify := &cobra.Command{
		Use:   "verify --session N",
		Short: "Check that SHA-256(seed) is the published commitment, that the registrants are the list whose count and digest were published when registration closed, and that the recorded positions are the draw recomputed from the seed and that list",
		RunE: func(cmd *cobra.Command, _ []string) error {
			if sessionID <= 0 {
				return fmt.Errorf("name the session: --session N")
			}
			ctx := cmd.Context()
			return withDB(ctx, func(db *mysql.DB) error {
				s, _, err := db.Session(ctx, sessionID)
				if err != nil {
					return err
				}
				if s.Mode != seckill.ModeDraw {
					return fmt.Errorf("session %d is a %s sale, not a draw", sessionID, s.Mode)
				}
				var registrants []seckill.Registrant
				for after := int64(0); ; {
					page, err := db.Registrants(ctx, sessionID, after, 10_000)
					if err != nil {
						return err
					}
					if len(page) == 0 {
						break
					}
					registrants, after = append(registrants, page...), page[len(page)-1].UserID
				}
				entries, err := db.DrawEntries(ctx, sessionID)
				if err != nil {
					return err
				}
				n, err := seckill.VerifyDraw(s, registrants, entries)
				if err != nil {
					return err
				}
				out := cmd.OutOrStdout()
				_, err = fmt.Fprintf(out,
					"session %d: draw verified\n  commitment %s = SHA-256(seed %s)\n  %d registrants before %s, digest %s as published\n  %d positions recorded match the draw recomputed\n",
					sessionID, s.DrawCommitment, s.DrawSeed, len(registrants), s.RegisterUntil.Format(time.RFC3339Nano), s.RegistrantsDigest, n)
				if err != nil {
					return err
				}
				places := map[int64]int{} // by item
				for _, e := range entries {
					places[e.SKUID]++
				}
				for _, p := range s.DrawPools() {
					places := places[p.SKUID]
					winners, item := min(p.Stock, places), ""
					if p.SKUID != 0 {
						item = fmt.Sprintf("item %d: ", p.SKUID)
					}
					if _, err := fmt.Fprintf(out, "  %sstock at the draw %d: %d positions (%d winners, %d waitlisted)\n",
						item, p.Stock, places, winners, places-winners); err != nil {
						return err
					}
				}
				if user == 0 {
					return nil
				}
				return printInclusion(cmd, user, registrants, entries, s.DrawPools())
			})
		},
	}
	verify.Flags().Int64Var(&sessionID, "session", 0, "the session's id")
	verify.Flags().Int64Var(&user, "user", 0, "also say where this shopper stands: in the list digested or not, and the position drawn")
	cmd.AddCommand(verify)
	return cmd
}

// printInclusion says whether a shopper is in the verified list, at which
// line of it (in ascending user id order, one a line: the text whose
// SHA-256 is the digest), for which item, and the position drawn: a
// winner's, or the place in the waitlist (the API's "position" until
// rights pass on).
func printInclusion(cmd *cobra.Command, user int64, registrants []seckill.Registrant, entries []seckill.DrawEntry, pools []seckill.DrawPool) error {
	out := cmd.OutOrStdout()
	line, in := slices.BinarySearchFunc(registrants, user, func(r seckill.Registrant, u int64) int { return cmp.Compare(r.UserID, u) })
	if !in {
		_, err := fmt.Fprintf(out, "  user %d is not in the list\n", user)
		return err
	}
	place := "not among the positions recorded (LOST)"
	for _, e := range entries {
		if e.UserID != user {
			continue
		}
		place = fmt.Sprintf("drawn at position %d", e.Position)
		if i := slices.IndexFunc(pools, func(p seckill.DrawPool) bool { return p.SKUID == e.SKUID }); i < 0 {
			continue // not after VerifyDraw held: it recomputed every entry, pool by pool
		} else if stock := pools[i].Stock; e.Position <= stock {
			place += " (WON)"
		} else {
			place += fmt.Sprintf(" (WAITLISTED, position %d at the draw)", e.Position-stock)
		}
	}
	item := ""
	if sku := registrants[line].SKUID; sku != 0 {
		item = fmt.Sprintf(" for item %d", sku)
	}
	_, err := fmt.Fprintf(out, "  user %d is line %d of the list%s, %s\n", user, line+1, item, place)
	return err
}

// preflightDrawKey refuses to start a worker without a usable
// SECKILL_DRAW_KEY, before it connects to anything: the message must not
// hide behind a connection error.
func preflightDrawKey() error {
	c, err := app.LoadConfig()
	if err != nil {
		return err
	}
	return c.RequireDrawKey()
}
