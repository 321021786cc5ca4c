package render

import (
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/infrastate/backend-operator/internal/jsonbounds"
)

// Errors of checkOverrideValue. None quotes the value: it may be secret.
var (
	errOverrideTooDeep   = fmt.Errorf("a list or object value may hold only strings, numbers, bools and null (nesting depth at most %d)", MaxOverrideDepth)
	errOverrideString    = fmt.Errorf("a string is longer than %d bytes", MaxOverrideStringBytes)
	errOverrideMembers   = fmt.Errorf("a list or object has more than %d members", MaxOverrideMembers)
	errOverrideKey       = fmt.Errorf("an object key is longer than %d bytes", MaxOverrideKeyBytes)
	errOverrideNumber    = fmt.Errorf("a number literal is longer than %d bytes", MaxOverrideNumberBytes)
	errOverrideMagnitude = fmt.Errorf("a number must be 0 or have a magnitude between 1e-%d and 1e%d",
		MaxOverrideNumberExponent, MaxOverrideNumberExponent)
)

// checkOverrideValue checks the raw JSON of an override value against the
// limits (MaxOverrideDepth, MaxOverrideStringBytes, MaxOverrideMembers,
// MaxOverrideKeyBytes, MaxOverrideNumberBytes, MaxOverrideNumberExponent)
// and that it is one valid JSON value, and returns its size as
// MaxOverrideValuesBytes counts it. It reads the value one token at a
// time and stops at the first breach (see [jsonbounds.Measure]), so a
// hostile value costs no more than the bytes scanned before it.
func checkOverrideValue(raw []byte) (int, error) {
	size, err := jsonbounds.Measure(raw, jsonbounds.Bounds{
		MaxDepth:   MaxOverrideDepth,
		MaxMembers: MaxOverrideMembers,
		MaxString:  MaxOverrideStringBytes,
		MaxKey:     MaxOverrideKeyBytes,
		Number:     checkOverrideNumber,
	})
	switch {
	case err == nil:
		return size, nil
	case errors.Is(err, jsonbounds.ErrTooDeep):
		return 0, errOverrideTooDeep
	case errors.Is(err, jsonbounds.ErrStringTooLong):
		return 0, errOverrideString
	case errors.Is(err, jsonbounds.ErrTooManyMembers):
		return 0, errOverrideMembers
	case errors.Is(err, jsonbounds.ErrKeyTooLong):
		return 0, errOverrideKey
	}
	return 0, err
}

// checkOverrideNumber checks a JSON number literal (valid JSON, as the
// decoder checked): at most MaxOverrideNumberBytes long, and 0 or of a
// magnitude in [1e-MaxOverrideNumberExponent, 1e+MaxOverrideNumberExponent).
// The magnitude is read from the literal's digits and exponent, without
// converting it to a number: a number as large as 1e999999999 is refused
// in a few steps.
//
// Within these bounds, the plain decimal text the files hold (big.Float's
// Text('f', -1), at go-cty's 512 bits of precision, which needs no more
// significant digits than the literal has) is at most 66 bytes.
func checkOverrideNumber(literal string) error {
	if len(literal) > MaxOverrideNumberBytes {
		return errOverrideNumber
	}
	mantissa, exponent := literal, ""
	if i := strings.IndexAny(literal, "eE"); i >= 0 {
		mantissa, exponent = literal[:i], literal[i+1:]
	}
	mantissa = strings.TrimPrefix(mantissa, "-")
	intPart, fraction, _ := strings.Cut(mantissa, ".")

	// The power of ten of the first significant digit, before the
	// exponent.
	var power int
	if i := strings.IndexFunc(intPart, isNonZeroDigit); i >= 0 {
		power = len(intPart) - 1 - i
	} else if i := strings.IndexFunc(fraction, isNonZeroDigit); i >= 0 {
		power = -1 - i
	} else {
		return nil // zero, whatever the exponent
	}

	if exponent != "" {
		negative := exponent[0] == '-'
		digits := strings.TrimLeft(strings.TrimLeft(exponent, "+-"), "0")
		// power is within ±MaxOverrideNumberBytes: an exponent of five
		// digits or more cannot bring it back within the bounds.
		if len(digits) > 4 {
			return errOverrideMagnitude
		}
		e := 0
		if digits != "" {
			var err error
			if e, err = strconv.Atoi(digits); err != nil {
				return errOverrideMagnitude
			}
		}
		if negative {
			e = -e
		}
		power += e
	}
	if power < -MaxOverrideNumberExponent || power >= MaxOverrideNumberExponent {
		return errOverrideMagnitude
	}
	return nil
}

// isNonZeroDigit reports whether r is a digit other than 0.
func isNonZeroDigit(r rune) bool {
	return r >= '1' && r <= '9'
}
