// Package mysql is the MySQL (MariaDB) adapter: the source of truth for
// sessions, database stock, orders, per-user slots, payments and the order
// ledger, reached through GORM. Every state change is one transaction and a
// compare-and-set on the current status, so activity retries are harmless.
package mysql

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"net/url"
	"strings"
	"time"

	mysqldriver "github.com/go-sql-driver/mysql"
	"github.com/pressly/goose/v3"
	gormmysql "gorm.io/driver/mysql"
	"gorm.io/gorm"
	"gorm.io/gorm/logger"

	"github.com/seckill/seckill/migrations"
)

// DB is the MySQL store.
type DB struct {
	gorm *gorm.DB
	sql  *sql.DB
	// now is the clock for created_at/updated_at columns, at their
	// precision (DATETIME(3)): a row a call returns is then the row as
	// stored, to the millisecond (CreateOrder's caller caches it as the
	// order's view). Tests may pin it.
	now func() time.Time
	// creates and closes group the hot-row transactions of a session
	// (batch.go).
	creates *batcher[*createCall]
	closes  *batcher[*closeCall]
}

// Open connects to the database named in dsn, creating it first if it is
// missing, and sizes the pool for a service that mostly waits on row locks.
func Open(ctx context.Context, dsn string) (*DB, error) {
	cfg, err := mysqldriver.ParseDSN(dsn)
	if err != nil {
		return nil, fmt.Errorf("parse SECKILL_MYSQL_DSN: %w", err)
	}
	cfg.ParseTime = true
	cfg.Loc = time.UTC
	// The driver fills the placeholders in: one round trip per statement,
	// where a prepared statement costs a prepare, an execute and a close
	// on every statement of every order. Safe with the connection's
	// default charset (utf8mb4); a DSN that names its own charset keeps
	// prepared statements, since with a multibyte charset such as gbk a
	// trailing 0x5c byte could escape a quote.
	if !namesCharset(dsn) {
		cfg.InterpolateParams = true
	}
	if err := createDatabase(ctx, cfg); err != nil {
		return nil, err
	}
	sqlDB, err := sql.Open("mysql", cfg.FormatDSN())
	if err != nil {
		return nil, err
	}
	sqlDB.SetMaxOpenConns(32)
	sqlDB.SetMaxIdleConns(32)
	sqlDB.SetConnMaxLifetime(30 * time.Minute)
	g, err := gorm.Open(newDialector(gormmysql.Config{Conn: sqlDB}), &gorm.Config{
		Logger:                 logger.Discard,
		SkipDefaultTransaction: true,
		TranslateError:         true,
		NowFunc:                func() time.Time { return time.Now().UTC() },
	})
	if err != nil {
		sqlDB.Close()
		return nil, err
	}
	if err := sqlDB.PingContext(ctx); err != nil {
		sqlDB.Close()
		return nil, fmt.Errorf("mysql %s: %w", cfg.Addr, err)
	}
	db := &DB{gorm: g, sql: sqlDB, now: func() time.Time { return columnTime(time.Now()) }}
	db.creates = newBatcher(db.runCreates)
	db.closes = newBatcher(db.runCloses)
	return db, nil
}

// namesCharset tells whether a DSN sets the connection's charset.
func namesCharset(dsn string) bool {
	_, query, _ := strings.Cut(dsn, "?")
	params, err := url.ParseQuery(query)
	return err != nil || params.Has("charset")
}

// createDatabase runs CREATE DATABASE IF NOT EXISTS for cfg.DBName over a
// connection that names no database.
func createDatabase(ctx context.Context, cfg *mysqldriver.Config) error {
	if cfg.DBName == "" {
		return errors.New("SECKILL_MYSQL_DSN names no database")
	}
	root := cfg.Clone()
	root.DBName = ""
	db, err := sql.Open("mysql", root.FormatDSN())
	if err != nil {
		return err
	}
	defer db.Close()
	// The name comes from operator configuration, but quote it anyway.
	q := "CREATE DATABASE IF NOT EXISTS `" + escapeIdent(cfg.DBName) + "` CHARACTER SET utf8mb4"
	if _, err := db.ExecContext(ctx, q); err != nil {
		return fmt.Errorf("mysql %s: create database %s: %w", cfg.Addr, cfg.DBName, err)
	}
	return nil
}

// DropDatabase removes the database named in dsn. Tests use it to clean up
// the fresh database each of them gets.
func DropDatabase(ctx context.Context, dsn string) error {
	cfg, err := mysqldriver.ParseDSN(dsn)
	if err != nil {
		return err
	}
	name := cfg.DBName
	cfg.DBName = ""
	db, err := sql.Open("mysql", cfg.FormatDSN())
	if err != nil {
		return err
	}
	defer db.Close()
	_, err = db.ExecContext(ctx, "DROP DATABASE IF EXISTS `"+escapeIdent(name)+"`")
	return err
}

func escapeIdent(s string) string {
	out := make([]byte, 0, len(s))
	for i := 0; i < len(s); i++ {
		if s[i] == '`' {
			out = append(out, '`')
		}
		out = append(out, s[i])
	}
	return string(out)
}

// Migrate applies the embedded migrations that are not applied yet.
func (db *DB) Migrate(ctx context.Context) error {
	provider, err := goose.NewProvider(goose.DialectMySQL, db.sql, migrations.FS)
	if err != nil {
		return err
	}
	_, err = provider.Up(ctx)
	return err
}

// Ping checks that the database answers.
func (db *DB) Ping(ctx context.Context) error {
	if err := db.sql.PingContext(ctx); err != nil {
		return unavailable(err)
	}
	return nil
}

// Close closes the pool.
func (db *DB) Close() error { return db.sql.Close() }

// isDuplicate reports whether err is a unique-key violation.
func isDuplicate(err error) bool {
	var me *mysqldriver.MySQLError
	return errors.Is(err, gorm.ErrDuplicatedKey) || (errors.As(err, &me) && me.Number == 1062)
}
