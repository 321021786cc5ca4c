package statefile

import (
	"encoding/json"
	"errors"
	"fmt"
)

// TypeKind is the coarse kind of a Terraform type, as RemoteState's typed
// readers see it.
type TypeKind string

// The kinds Kind returns.
const (
	KindString  TypeKind = "string"
	KindNumber  TypeKind = "number"
	KindBool    TypeKind = "bool"
	KindList    TypeKind = "list" // list, set and tuple types
	KindMap     TypeKind = "map"
	KindObject  TypeKind = "object"
	KindDynamic TypeKind = "dynamic"
)

// ErrInvalidType is wrapped by the errors Kind returns.
var ErrInvalidType = errors.New("invalid output type")

// Kind validates a Terraform type in its JSON form (as written in the type
// of a state output) and returns its kind: "string", "number", "bool" and
// "dynamic" map to themselves, ["list",T], ["set",T] and ["tuple",[T...]] to
// KindList, ["map",T] to KindMap, and ["object",{"attr":T...}] (optionally
// with a third element listing optional attributes) to KindObject. Nested
// types are validated too. Errors never quote the type: it comes from a
// state that may not be one.
func Kind(typeJSON json.RawMessage) (TypeKind, error) {
	if len(typeJSON) == 0 {
		return "", fmt.Errorf("%w: empty", ErrInvalidType)
	}
	var v any
	if err := json.Unmarshal(typeJSON, &v); err != nil {
		// The decoder's message quotes the input.
		return "", fmt.Errorf("%w: not JSON", ErrInvalidType)
	}
	k, err := kindOf(v, 0)
	if err != nil {
		return "", fmt.Errorf("%w: %w", ErrInvalidType, err)
	}
	return k, nil
}

// kindOf classifies a decoded type, recursing into element types.
func kindOf(v any, depth int) (TypeKind, error) {
	if depth > maxDepth {
		return "", errDepth
	}
	switch t := v.(type) {
	case string:
		switch TypeKind(t) {
		case KindString, KindNumber, KindBool, KindDynamic:
			return TypeKind(t), nil
		}
		return "", errors.New("unknown primitive type")
	case []any:
		return complexKind(t, depth)
	}
	return "", fmt.Errorf("a type is a string or an array, not %s", jsonKind(v))
}

// complexKind classifies ["list"|"set"|"map"|"object"|"tuple", ...].
func complexKind(t []any, depth int) (TypeKind, error) {
	if len(t) < 2 {
		return "", errors.New("a complex type needs a kind and an element type")
	}
	name, ok := t[0].(string)
	if !ok {
		return "", fmt.Errorf("a complex type's kind must be a string, not %s", jsonKind(t[0]))
	}
	switch name {
	case "list", "set", "map":
		if len(t) != 2 {
			return "", fmt.Errorf("%s type has %d elements, want 2", name, len(t))
		}
		if _, err := kindOf(t[1], depth+1); err != nil {
			return "", fmt.Errorf("%s element: %w", name, err)
		}
		if name == "map" {
			return KindMap, nil
		}
		return KindList, nil
	case "tuple":
		elems, ok := t[1].([]any)
		if len(t) != 2 || !ok {
			return "", errors.New(`tuple type must be ["tuple",[types...]]`)
		}
		for i, e := range elems {
			if _, err := kindOf(e, depth+1); err != nil {
				return "", fmt.Errorf("tuple element %d: %w", i, err)
			}
		}
		return KindList, nil
	case "object":
		attrs, ok := t[1].(map[string]any)
		if !ok || len(t) > 3 {
			return "", errors.New(`object type must be ["object",{attributes...}] with an optional list of optional attributes`)
		}
		for _, a := range attrs {
			if _, err := kindOf(a, depth+1); err != nil {
				return "", fmt.Errorf("object attribute: %w", err)
			}
		}
		if len(t) == 3 {
			if err := checkOptional(t[2], attrs); err != nil {
				return "", err
			}
		}
		return KindObject, nil
	}
	return "", errors.New("unknown complex type")
}

// checkOptional validates the optional-attribute list of an object type.
func checkOptional(v any, attrs map[string]any) error {
	list, ok := v.([]any)
	if !ok {
		return errors.New("object optional attributes must be a list of names")
	}
	for _, o := range list {
		n, ok := o.(string)
		if !ok {
			return errors.New("object optional attributes must be a list of names")
		}
		if _, ok := attrs[n]; !ok {
			return errors.New("an optional attribute is not an attribute of the object")
		}
	}
	return nil
}

// jsonKind names the JSON kind of a decoded value, for error messages.
func jsonKind(v any) string {
	switch v.(type) {
	case nil:
		return "null"
	case bool:
		return "a boolean"
	case float64:
		return "a number"
	case string:
		return "a string"
	case []any:
		return "an array"
	case map[string]any:
		return "an object"
	}
	return fmt.Sprintf("%T", v)
}
