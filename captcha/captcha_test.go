package captcha_test

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/seckill/seckill"
	"github.com/seckill/seckill/captcha"
)

// memStore is the captcha store in memory (redis.Captchas in production,
// whose own tests run against Redis).
type memStore struct {
	mu   sync.Mutex
	recs map[string]string
}

func (m *memStore) Put(_ context.Context, id, rec string, _ time.Duration) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.recs[id] = rec
	return nil
}

func (m *memStore) Peek(_ context.Context, id string) (string, bool, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	rec, ok := m.recs[id]
	return rec, ok, nil
}

func (m *memStore) Take(_ context.Context, id string) (string, bool, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	rec, ok := m.recs[id]
	delete(m.recs, id)
	return rec, ok, nil
}

// A captcha answers for its shopper and session only, once, right or
// wrong; its audio is its shopper's and does not use it up; without a
// store there are none.
func TestCaptcha(t *testing.T) {
	ctx := context.Background()
	st := &memStore{recs: map[string]string{}}
	answer := func(id string) string { return st.recs[id][strings.LastIndex(st.recs[id], "|")+1:] }

	id, img, err := captcha.Draw(ctx, st, 41, 7)
	require.NoError(t, err)
	require.Len(t, id, 32)
	require.True(t, strings.HasPrefix(img, "data:image/png;base64,"))
	wav, err := captcha.Audio(ctx, st, id, 41)
	require.NoError(t, err)
	require.Equal(t, "RIFF", string(wav[:4]))
	_, err = captcha.Audio(ctx, st, id, 42)
	require.Equal(t, seckill.ENOTFOUND, seckill.ErrorCode(err), "another shopper's")
	require.NoError(t, captcha.Check(ctx, st, id, " "+answer(id)+" ", 41, 7), "the audio did not use it up")
	require.ErrorContains(t, captcha.Check(ctx, st, id, "000000", 41, 7), "already used")

	id, _, err = captcha.Draw(ctx, st, 41, 7)
	require.NoError(t, err)
	wrong := "000000"
	if answer(id) == wrong {
		wrong = "111111"
	}
	require.ErrorContains(t, captcha.Check(ctx, st, id, wrong, 41, 7), "answer is wrong")
	require.Empty(t, st.recs, "a wrong answer uses it up")
	for _, who := range []struct{ user, session int64 }{{42, 7}, {41, 8}} {
		id, _, err = captcha.Draw(ctx, st, 41, 7)
		require.NoError(t, err)
		require.ErrorContains(t, captcha.Check(ctx, st, id, answer(id), who.user, who.session), "already used")
	}

	_, _, err = captcha.Draw(ctx, nil, 41, 7)
	require.Equal(t, seckill.EUNAVAILABLE, seckill.ErrorCode(err))
	require.Equal(t, seckill.EUNAVAILABLE, seckill.ErrorCode(captcha.Check(ctx, nil, id, "1", 41, 7)))
}
