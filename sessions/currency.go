package sessions

import (
	"strings"

	"github.com/bojanz/currency"

	"github.com/seckill/seckill"
)

// CheckCurrency refuses a code the world does not pay in: a sale priced
// in a typo ("uds") would take its orders and then fail every payment at
// the provider's checkout, its winners' units held until the pay
// timeout. The domain's check (seckill.ValidCurrency) is the code's shape,
// three lower-case letters; this one is the ISO 4217 list of currencies in
// use (CLDR's: no XXX, no test code XTS, no metal such as XAU).
func CheckCurrency(code string) error {
	if !seckill.ValidCurrency(code) || !currency.IsValid(strings.ToUpper(code)) {
		return seckill.Errorf(seckill.EINVALID, "currency %q is not an ISO 4217 currency in use; give its code in lower case, such as usd, eur or jpy", code)
	}
	return nil
}
