package app

import (
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"os"

	mysqldriver "github.com/go-sql-driver/mysql"
)

// mysqlTLSName is the name our MySQL TLS configuration is registered
// under with the driver (the DSN's tls= parameter).
const mysqlTLSName = "seckill"

// loadTLS reads the TLS files of Redis and MySQL once, at start, so a
// missing or wrong file stops the process before it connects. MySQL's
// configuration is registered with the driver and named in the DSN.
func (c *Config) loadTLS() error {
	var err error
	if c.redisTLS, err = tlsFiles("SECKILL_REDIS", c.RedisCAFile, c.RedisCertFile, c.RedisKeyFile); err != nil {
		return err
	}
	if c.redisTLS == nil && c.RedisTLS {
		// The system's roots; go-redis fills ServerName from each node's address.
		c.redisTLS = &tls.Config{MinVersion: tls.VersionTLS12}
	}
	mt, err := tlsFiles("SECKILL_MYSQL", c.MySQLCAFile, c.MySQLCertFile, c.MySQLKeyFile)
	if err != nil || mt == nil {
		return err
	}
	if err := mysqldriver.RegisterTLSConfig(mysqlTLSName, mt); err != nil {
		return err
	}
	dsn, err := mysqldriver.ParseDSN(c.MySQLDSN)
	if err != nil {
		return fmt.Errorf("SECKILL_MYSQL_DSN: %w", err)
	}
	dsn.TLSConfig = mysqlTLSName
	c.MySQLDSN = dsn.FormatDSN()
	return nil
}

// tlsFiles is the TLS configuration of a private CA (caFile) and a client
// certificate (certFile, keyFile), each optional; nil when none is set.
// prefix names the variables in errors.
func tlsFiles(prefix, caFile, certFile, keyFile string) (*tls.Config, error) {
	if caFile == "" && certFile == "" && keyFile == "" {
		return nil, nil
	}
	conf := &tls.Config{MinVersion: tls.VersionTLS12}
	if caFile != "" {
		pem, err := os.ReadFile(caFile)
		if err != nil {
			return nil, fmt.Errorf("%s_CA_FILE: %w", prefix, err)
		}
		conf.RootCAs = x509.NewCertPool()
		if !conf.RootCAs.AppendCertsFromPEM(pem) {
			return nil, fmt.Errorf("%s_CA_FILE=%s holds no PEM certificate", prefix, caFile)
		}
	}
	if (certFile == "") != (keyFile == "") {
		return nil, fmt.Errorf("%s_CERT_FILE and %s_KEY_FILE go together: set both or neither", prefix, prefix)
	}
	if certFile != "" {
		cert, err := tls.LoadX509KeyPair(certFile, keyFile)
		if err != nil {
			return nil, fmt.Errorf("%s_CERT_FILE/%s_KEY_FILE: %w", prefix, prefix, err)
		}
		conf.Certificates = []tls.Certificate{cert}
	}
	return conf, nil
}
