package app

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// SECKILL_CORS_ORIGINS takes origins only (what a browser sends in
// Origin), and SECKILL_TEMPORAL_UI_URL an absolute URL: anything else is
// refused at start, naming the variable.
func TestWebConfig(t *testing.T) {
	t.Setenv("SECKILL_CORS_ORIGINS", " https://Shop.example.com ,http://127.0.0.1:3000,")
	t.Setenv("SECKILL_TEMPORAL_UI_URL", "http://127.0.0.1:8233/")
	c, err := LoadConfig()
	require.NoError(t, err)
	origins, err := c.origins()
	require.NoError(t, err)
	require.Equal(t, []string{"https://shop.example.com", "http://127.0.0.1:3000"}, origins)
	require.Equal(t, "http://127.0.0.1:8233/namespaces/default/workflows/order:1-ab%2Fc", c.workflowLink("default")("1-ab/c"))
	require.Nil(t, Web{}.workflowLink("default"), "no UI, no link")

	for _, bad := range []string{"*", "shop.example.com", "https://shop.example.com/", "https://shop.example.com/path", "ftp://x"} {
		t.Setenv("SECKILL_CORS_ORIGINS", bad)
		_, err := LoadConfig()
		require.ErrorContains(t, err, "SECKILL_CORS_ORIGINS", bad)
	}
	t.Setenv("SECKILL_CORS_ORIGINS", "")
	t.Setenv("SECKILL_TEMPORAL_UI_URL", "127.0.0.1:8233")
	_, err = LoadConfig()
	require.ErrorContains(t, err, "SECKILL_TEMPORAL_UI_URL")
}
