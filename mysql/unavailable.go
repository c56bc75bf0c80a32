package mysql

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"fmt"
	"io"
	"net"
	"syscall"

	mysqldriver "github.com/go-sql-driver/mysql"
	gormmysql "gorm.io/driver/mysql"

	"github.com/seckill/seckill"
)

// errUnavailable is what every caller sees of a database that cannot
// answer now: UNAVAILABLE (503 with Retry-After in the API, a retryable
// failure in an activity), never a raw driver error that would read as
// INTERNAL, a bug.
var errUnavailable = seckill.Errorf(seckill.EUNAVAILABLE, "database unavailable, retry shortly")

// unavailable wraps an infrastructure failure of MySQL in the error
// vocabulary, keeping the driver error in the chain (errors.Is/As still
// find it) for logs and for code that tells failures apart.
func unavailable(err error) error {
	return fmt.Errorf("%w (mysql: %w)", errUnavailable, err)
}

// infrastructure reports whether err says the database could not be
// reached or did not answer in time, as opposed to an answer (not found, a
// duplicate key, a refused update), which stays as it is.
func infrastructure(err error) bool {
	var ne net.Error
	var me *mysqldriver.MySQLError
	switch {
	case errors.Is(err, driver.ErrBadConn), errors.Is(err, mysqldriver.ErrInvalidConn), errors.Is(err, sql.ErrConnDone),
		errors.Is(err, context.DeadlineExceeded), errors.Is(err, context.Canceled),
		errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF),
		errors.Is(err, syscall.ECONNREFUSED), errors.Is(err, syscall.ECONNRESET), errors.Is(err, syscall.EPIPE),
		errors.As(err, &ne): // dial, read and write failures and their timeouts
		return true
	case errors.As(err, &me):
		switch me.Number {
		case 1040, // too many connections
			1053, // server shutdown in progress
			1205, // lock wait timeout
			1213, // deadlock: nothing was done, a retry goes through
			1317, // query interrupted
			1927, // connection killed (MariaDB)
			1969, // max_statement_time exceeded (MariaDB)
			3024: // max_execution_time exceeded (MySQL)
			return true
		}
	}
	return false
}

// dialector is GORM's MySQL dialector with one more translation: errors
// that are infrastructure failures become errUnavailable. GORM routes every
// statement's, transaction begin's and commit's error through Translate
// (TranslateError), so this is the one place the mapping happens.
type dialector struct{ *gormmysql.Dialector }

func newDialector(cfg gormmysql.Config) dialector {
	return dialector{gormmysql.New(cfg).(*gormmysql.Dialector)}
}

func (d dialector) Translate(err error) error {
	err = d.Dialector.Translate(err)
	if infrastructure(err) && !errors.Is(err, errUnavailable) {
		return unavailable(err)
	}
	return err
}
