package render

import (
	"errors"
	"fmt"
	"regexp"
	"strings"

	"github.com/zclconf/go-cty/cty"
	ctyjson "github.com/zclconf/go-cty/cty/json"

	backendsv1alpha1 "github.com/infrastate/backend-operator/api/v1alpha1"
)

// overridePath is the syntax of an override path, as admission checks it: a
// dot-separated list of lower-case attribute names. Checked again here
// because the names are written into HCL unquoted.
var overridePath = regexp.MustCompile(`^[a-z_][a-z0-9_]*(\.[a-z_][a-z0-9_]*)*$`)

// attributeName is the syntax of one name of an override path, required
// of the keys of an object written as a block: they become attribute
// names, written into HCL unquoted.
var attributeName = regexp.MustCompile(`^[a-z_][a-z0-9_]*$`)

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
// missing. A path naming a nested block (one b holds or its schema
// declares) takes an object, whose members set attributes of the block as
// dotted paths would (see setBlock). Every override is checked against the
// limits ([checkOverrides]) before any is decoded. Errors name the path
// but never the value, which may be secret.
func applyOverrides(b *body, overrides []backendsv1alpha1.Override) error {
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
func applyOverride(b *body, o backendsv1alpha1.Override) error {
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
	name := names[len(names)-1]
	if target.isBlock(name) {
		err = setBlock(target, name, v)
	} else {
		err = target.set(name, v)
	}
	if err != nil {
		return fmt.Errorf("%w: path %q: %w", ErrInvalidOverride, o.Path, err)
	}
	return nil
}

// setBlock sets the members of the object v as attributes of the nested
// block name of b, in the order of their names, creating the block when
// missing: `name { k = v ... }` in HCL, an object in JSON, which Terraform
// reads alike. Any other value is refused: HCL would hold an attribute
// where Terraform expects a block ("Unsupported argument") while JSON
// reads an object as the block, and null or [] as no block at all. Keys
// must be attribute names and not credentials. Errors never quote a key
// or a value.
func setBlock(b *body, name string, v cty.Value) error {
	if v.IsNull() || !v.Type().IsObjectType() {
		return fmt.Errorf("%q is a block: the value must be an object of the block's attributes (or set them one by one with paths such as %s.<attribute>)", name, name)
	}
	for key := range v.Type().AttributeTypes() {
		if !attributeName.MatchString(key) {
			return fmt.Errorf("%q is a block: the keys of the value must be lower-case attribute names", name)
		}
		if credentialAttributes[key] {
			return fmt.Errorf("%w: %q is a block: a key of the value names a credential attribute: set credentials through Secret references", ErrCredentialOverride, name)
		}
	}
	nb, err := b.nested(name)
	if err != nil {
		return err
	}
	for it := v.ElementIterator(); it.Next(); {
		k, ev := it.Element()
		if nb.isBlock(k.AsString()) {
			return fmt.Errorf("%q is a block: a key of the value names a block nested in it", name)
		}
		if err := nb.set(k.AsString(), ev); err != nil {
			return err
		}
	}
	return nil
}

// overrideValue decodes a JSON override value, which checkOverrides found
// to be one valid JSON value within the limits, into cty: strings, numbers
// and bools as such, objects as objects, arrays as tuples, null as null.
// Errors never quote the value.
func overrideValue(raw []byte) (cty.Value, error) {
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
