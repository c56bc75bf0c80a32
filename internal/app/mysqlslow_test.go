package app

import (
	"os"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// SECKILL_MYSQL_SLOW: 200 ms unless set; 0 logs no slow statement, a
// negative duration (or a word) is a mistake.
func TestMySQLSlowConfig(t *testing.T) {
	t.Setenv("SECKILL_MYSQL_SLOW", "")
	os.Unsetenv("SECKILL_MYSQL_SLOW")
	c, err := LoadConfig()
	require.NoError(t, err)
	require.Equal(t, 200*time.Millisecond, c.MySQLSlow)

	t.Setenv("SECKILL_MYSQL_SLOW", "0")
	c, err = LoadConfig()
	require.NoError(t, err)
	require.Zero(t, c.MySQLSlow)

	t.Setenv("SECKILL_MYSQL_SLOW", "-1s")
	_, err = LoadConfig()
	require.ErrorContains(t, err, "SECKILL_MYSQL_SLOW")
	t.Setenv("SECKILL_MYSQL_SLOW", "off")
	_, err = LoadConfig()
	require.Error(t, err, "0 is off; a word is a mistake")
}
