package seckill

import (
	"crypto/aes"
	"crypto/cipher"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"strconv"
)

// A draw's seed: drawn by the worker, committed to before registration
// opens (its SHA-256), sealed at rest until the draw publishes it.

// NewDrawSeed is a fresh secret seed.
func NewDrawSeed() ([]byte, error) {
	seed := make([]byte, DrawSeedSize)
	_, err := rand.Read(seed)
	return seed, err
}

// DrawCommitment is the published commitment to a seed: its SHA-256, hex.
func DrawCommitment(seed []byte) string {
	sum := sha256.Sum256(seed)
	return hex.EncodeToString(sum[:])
}

// DrawKey seals draw seeds at rest (AES-256-GCM), so that MySQL and its
// backups hold no readable seed before the draw: only the worker, which
// seals and draws, holds the key (SECKILL_DRAW_KEY); the API never needs
// it. A sealed seed is bound to its session (the additional data), so it
// cannot be copied to another sale.
type DrawKey struct{ aead cipher.AEAD }

// ParseDrawKey reads a key written as 64 hex digits (32 bytes; `openssl
// rand -hex 32`).
func ParseDrawKey(s string) (*DrawKey, error) {
	raw, err := hex.DecodeString(s)
	if err != nil || len(raw) != 32 {
		return nil, Errorf(EINVALID, "SECKILL_DRAW_KEY must be 64 hex digits (32 bytes, e.g. openssl rand -hex 32)")
	}
	block, err := aes.NewCipher(raw)
	if err != nil {
		return nil, err
	}
	aead, err := cipher.NewGCM(block)
	if err != nil {
		return nil, err
	}
	return &DrawKey{aead: aead}, nil
}

func drawSealData(sessionID int64) []byte {
	return strconv.AppendInt([]byte("seckill draw seed of session "), sessionID, 10)
}

// Seal encrypts a session's seed: a random nonce, then the ciphertext.
func (k *DrawKey) Seal(sessionID int64, seed []byte) ([]byte, error) {
	nonce := make([]byte, k.aead.NonceSize(), k.aead.NonceSize()+len(seed)+k.aead.Overhead())
	if _, err := rand.Read(nonce); err != nil {
		return nil, err
	}
	return k.aead.Seal(nonce, nonce, seed, drawSealData(sessionID)), nil
}

// Open decrypts what Seal sealed for the same session with the same key.
func (k *DrawKey) Open(sessionID int64, sealed []byte) ([]byte, error) {
	n := k.aead.NonceSize()
	if len(sealed) < n {
		return nil, Errorf(ECONFLICT, "session %d: the sealed draw seed is too short", sessionID)
	}
	seed, err := k.aead.Open(nil, sealed[:n], sealed[n:], drawSealData(sessionID))
	if err != nil {
		return nil, Errorf(ECONFLICT, "session %d: the draw seed does not open with this SECKILL_DRAW_KEY (another key sealed it, or the row was altered)", sessionID)
	}
	return seed, nil
}
