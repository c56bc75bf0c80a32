package api

import (
	"context"

	"github.com/gofiber/fiber/v2"

	"github.com/seckill/seckill"
)

const localUser = "seckill.user"

// ShopperTokens verifies a shopper's bearer token (auth.Shoppers).
type ShopperTokens interface {
	Verify(token string) (userID int64, err error)
}

// OperatorAuth names the operator of an admin credential
// (auth.Operators).
type OperatorAuth interface {
	Authenticate(ctx context.Context, token string) (*seckill.Operator, error)
}

// shopper authenticates a shopper and stores the user id for the handler.
func (s *Server) shopper(c *fiber.Ctx) error {
	tok, ok := bearer(c)
	if !ok {
		return seckill.Errorf(seckill.EUNAUTHORIZED, "missing bearer token")
	}
	id, err := s.shoppers.Verify(tok)
	if err != nil {
		return err
	}
	c.Locals(localUser, id)
	return c.Next()
}

func userID(c *fiber.Ctx) int64 {
	id, _ := c.Locals(localUser).(int64)
	return id
}
