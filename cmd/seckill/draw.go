package main

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/seckill/seckill"
	"github.com/seckill/seckill/mysql"
)

// drawCmd checks a draw from what it published. Like `seckill refunds`
// it needs MySQL only: the seed, the registrants and the entries are all
// there.
func drawCmd() *cobra.Command {
	cmd := &cobra.Command{Use: "draw verify --session N", Short: "Check a draw sale's draw from its published seed"}
	var sessionID int64
	verify := &cobra.Command{
		Use:   "verify --session N",
		Short: "Check that SHA-256(seed) is the published commitment and that the recorded positions are the draw recomputed from the seed and the registrants",
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
				var registrants []int64
				for after := int64(0); ; {
					page, err := db.Registrants(ctx, sessionID, after, 10_000)
					if err != nil {
						return err
					}
					if len(page) == 0 {
						break
					}
					registrants, after = append(registrants, page...), page[len(page)-1]
				}
				entries, err := db.DrawEntries(ctx, sessionID)
				if err != nil {
					return err
				}
				n, err := seckill.VerifyDraw(s, registrants, entries)
				if err != nil {
					return err
				}
				winners := min(s.TotalStock, n)
				_, err = fmt.Fprintf(cmd.OutOrStdout(),
					"session %d: draw verified\n  commitment %s = SHA-256(seed %s)\n  %d registrants, %d positions recorded (%d winners, %d waitlisted) match the draw recomputed\n",
					sessionID, s.DrawCommitment, s.DrawSeed, len(registrants), n, winners, n-winners)
				return err
			})
		},
	}
	verify.Flags().Int64Var(&sessionID, "session", 0, "the session's id")
	cmd.AddCommand(verify)
	return cmd
}
