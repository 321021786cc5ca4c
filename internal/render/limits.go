package render

import (
	"fmt"
	"strings"

	backendsv1alpha1 "github.com/infrastate/backend-operator/api/v1alpha1"
)

// Limits on spec.overrides values. An override value is arbitrary JSON
// written by a tenant who may be hostile, and rendering amplifies it (every
// nesting level is indented in every file), so its shape and size are
// bounded before it is decoded or rendered. The API's admission rules
// enforce the same limits; the renderer checks them again so that a value
// that reaches it some other way still costs time and memory linear in its
// size.
const (
	// MaxOverrideDepth is how deep an override value may nest below its top
	// value: a value is a JSON scalar (string, number, bool or null), or a
	// list or an object whose members are all scalars.
	MaxOverrideDepth = 1
	// MaxOverrideStringBytes is the longest string an override value may
	// hold, as a member or as the value itself, in bytes of UTF-8 after
	// JSON escapes are decoded.
	MaxOverrideStringBytes = 4096
	// MaxOverrideMembers is the largest number of members of a list or an
	// object override value.
	MaxOverrideMembers = 64
	// MaxOverrideKeyBytes is the longest key of an object override value,
	// in bytes of UTF-8 after JSON escapes are decoded.
	MaxOverrideKeyBytes = 128
	// MaxOverrideNumberBytes is the longest JSON number literal an override
	// value may hold, in bytes, for example "-1.5e+10".
	MaxOverrideNumberBytes = 32
	// MaxOverrideNumberExponent bounds the magnitude of a number in an
	// override value: a number is 0, or its absolute value is at least
	// 1e-32 and less than 1e32 (10 to the power of minus and plus
	// MaxOverrideNumberExponent). The files write numbers in plain decimal
	// notation, without an exponent, so a number is written in at most 66
	// characters.
	MaxOverrideNumberExponent = 32
	// MaxOverrideValuesBytes is the largest total size of the override
	// values of one spec, counting the bytes of their strings and object
	// keys and jsonbounds.ScalarSize for any other scalar: the measure the admission
	// policy of config/admission computes, so that both refuse the same
	// specs.
	MaxOverrideValuesBytes = 32 * 1024
	// MaxOverridePathSegments is the most dot-separated names an override
	// path may have: each one nests a block in every rendered file.
	MaxOverridePathSegments = 3
)

// Limits the API already enforces at admission (MaxItems and MaxLength of
// spec.overrides and its paths), checked again because they bound the
// rendering too: a path nests one block per segment.
const (
	// maxOverrides is the most overrides one spec may have.
	maxOverrides = 32
	// maxOverridePathBytes is the longest override path.
	maxOverridePathBytes = 128
)

// checkOverrides checks every override of a spec against the limits, in
// order, before any of them is decoded: the path's syntax and that it
// names no credential, each value's shape with [checkOverrideValue], then
// the total size of the values. A value is scanned only within its own
// bounds, so checking costs time linear in those bounds whatever the spec
// holds. Errors wrap [ErrInvalidOverride] and name the path, never the
// value.
func checkOverrides(overrides []backendsv1alpha1.Override) error {
	if len(overrides) > maxOverrides {
		return fmt.Errorf("%w: %d overrides, more than %d", ErrInvalidOverride, len(overrides), maxOverrides)
	}
	total := 0
	for i, o := range overrides {
		if err := checkOverridePath(i, o.Path); err != nil {
			return err
		}
		size, err := checkOverrideValue(o.Value.Raw)
		if err != nil {
			return fmt.Errorf("%w: path %q: %w", ErrInvalidOverride, o.Path, err)
		}
		total += size
		if total > MaxOverrideValuesBytes {
			return fmt.Errorf("%w: path %q: the override values total more than %d bytes", ErrInvalidOverride, o.Path, MaxOverrideValuesBytes)
		}
	}
	return nil
}

// checkOverridePath checks the path of override i: its length, its syntax
// (the names are written into HCL unquoted) and that no segment names a
// credential attribute. A path too long is not quoted.
func checkOverridePath(i int, path string) error {
	if len(path) > maxOverridePathBytes {
		return fmt.Errorf("%w: the path of override %d is longer than %d bytes", ErrInvalidOverride, i, maxOverridePathBytes)
	}
	if !overridePath.MatchString(path) {
		return fmt.Errorf("%w: path %q must be dot-separated lower-case attribute names", ErrInvalidOverride, path)
	}
	if strings.Count(path, ".") >= MaxOverridePathSegments {
		return fmt.Errorf("%w: path %q has more than %d segments", ErrInvalidOverride, path, MaxOverridePathSegments)
	}
	for name := range strings.SplitSeq(path, ".") {
		if credentialAttributes[name] {
			return fmt.Errorf("%w: %w: path %q: set credentials through Secret references", ErrInvalidOverride, ErrCredentialOverride, path)
		}
	}
	return nil
}
