// Package migrations embeds the versioned SQL schema of seckill. The files
// are applied in order by goose (`seckill migrate`, tests, `seckill dev`).
package migrations

import "embed"

// FS holds the *.sql migration files.
//
//go:embed *.sql
var FS embed.FS
