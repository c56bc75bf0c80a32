package capacity

import (
	"context"
	"database/sql"
	"math"
	"strings"
)

// MySQL reads MariaDB's per-user statistics (information_schema.
// USER_STATISTICS, kept while the global userstat is ON) for one user:
// transactions committed and rolled back, rows read, sent, inserted,
// updated and deleted, statements by kind, bytes, and the server's CPU
// and busy time on the user's statements ("cpu_us", "busy_us"). Reading through a
// connection of another user (root) keeps the probe out of the counts;
// give the application a user of its own and nothing else is in them.
type MySQL struct {
	DB   *sql.DB // a connection of another user
	User string
}

func (m *MySQL) Name() string { return "mysql" }

// userStatColumns are the USER_STATISTICS columns read, and their names in Counts.
var userStatColumns = []string{
	"COMMIT_TRANSACTIONS", "ROLLBACK_TRANSACTIONS",
	"SELECT_COMMANDS", "UPDATE_COMMANDS", "OTHER_COMMANDS",
	"ROWS_READ", "ROWS_SENT", "ROWS_INSERTED", "ROWS_UPDATED", "ROWS_DELETED",
	"BYTES_RECEIVED", "BYTES_SENT",
	// Seconds, as fractions: read as microseconds.
	"CPU_TIME", "BUSY_TIME",
}

func (m *MySQL) Read(ctx context.Context) (Counts, error) {
	vals := make([]float64, len(userStatColumns))
	ptrs := make([]any, len(vals))
	for i := range vals {
		ptrs[i] = &vals[i]
	}
	err := m.DB.QueryRowContext(ctx, "SELECT "+strings.Join(userStatColumns, ", ")+
		" FROM information_schema.USER_STATISTICS WHERE USER = ?", m.User).Scan(ptrs...)
	if err != nil && err != sql.ErrNoRows {
		return nil, err
	}
	c := Counts{}
	for i, col := range userStatColumns {
		switch col {
		case "CPU_TIME":
			c["cpu_us"] = math.Round(vals[i] * 1e6)
		case "BUSY_TIME":
			c["busy_us"] = math.Round(vals[i] * 1e6)
		default:
			c[strings.ToLower(col)] = vals[i]
		}
	}
	return c, nil
}
