package render

import (
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"strings"

	"github.com/zclconf/go-cty/cty"
	ctyjson "github.com/zclconf/go-cty/cty/json"

	"github.com/infrastate/backend-operator/api/v1alpha1"
	"github.com/infrastate/backend-operator/internal/jsonbounds"
)

// overridePath is the syntax of an override path, as admission checks it: a
// dot-separated list of lower-case attribute names. Checked again here
// because the names are written into HCL unquoted.
var overridePath = regexp.MustCompile(`^[a-z_][a-z0-9_]*(\.[a-z_][a-z0-9_]*)*$`)

// credentialAttributes are the attributes of the http and cos backends that
// carry secrets. They come only from Secret references, through the
// environment, and never from overrides.
var credentialAttributes = map[string]bool{
	"password":                  true,
	"client_certificate_pem":    true,
	"client_private_key_pem":    true,
	"client_ca_certificate_pem": true,
	"secret_id":                 true,
	"secret_key":                true,
	"security_token":            true,
}

// applyOverrides merges overrides into b, in order, after the typed
// attributes: a path "a" sets (or replaces in place) attribute a of b; a
// path "a.b" sets attribute b in the nested block a, which is created when
// missing. Every override is checked against the limits ([checkOverrides])
// before any is decoded. Errors name the path but never the value, which
// may be secret.
func applyOverrides(b *body, overrides []v1alpha1.Override) error {
	if err := checkOverrides(overrides); err != nil {
		return err
	}
	for _, o := range overrides {
		if err := applyOverride(b, o); err != nil {
			return err
		}
	}
	return nil
}

// applyOverride sets one override, already checked by checkOverrides.
func applyOverride(b *body, o v1alpha1.Override) error {
	names := strings.Split(o.Path, ".")
	v, err := overrideValue(o.Value.Raw)
	if err != nil {
		return fmt.Errorf("%w: path %q: %w", ErrInvalidOverride, o.Path, err)
	}
	target := b
	for _, name := range names[:len(names)-1] {
		if target, err = target.nested(name); err != nil {
			return fmt.Errorf("%w: path %q: %w", ErrInvalidOverride, o.Path, err)
		}
	}
	if err := target.set(names[len(names)-1], v); err != nil {
		return fmt.Errorf("%w: path %q: %w", ErrInvalidOverride, o.Path, err)
	}
	return nil
}

// errInvalidJSON reports an override value that is not valid JSON. The
// decoder's own message is dropped: it may quote part of the value.
var errInvalidJSON = jsonbounds.ErrNotJSON

// overrideValue decodes a JSON override value into cty: strings, numbers
// and bools as such, objects as objects, arrays as tuples, null as null.
func overrideValue(raw []byte) (cty.Value, error) {
	if len(raw) == 0 {
		return cty.NilVal, fmt.Errorf("%w: the value is empty", errInvalidJSON)
	}
	if !json.Valid(raw) {
		var syntaxErr *json.SyntaxError
		if err := json.Unmarshal(raw, new(any)); errors.As(err, &syntaxErr) {
			return cty.NilVal, fmt.Errorf("%w: syntax error at byte %d", errInvalidJSON, syntaxErr.Offset)
		}
		return cty.NilVal, errInvalidJSON
	}
	ty, err := ctyjson.ImpliedType(raw)
	if err != nil {
		// Valid JSON that cty cannot represent: an object repeating a
		// key with values of different types.
		return cty.NilVal, errors.New("value cannot be decoded: an object repeats a key with values of different types")
	}
	v, err := ctyjson.Unmarshal(raw, ty)
	if err != nil {
		return cty.NilVal, errors.New("value cannot be decoded")
	}
	return v, nil
}
