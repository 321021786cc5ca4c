package outputs

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"sort"

	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/infrastate/backend-operator/internal/statefile"
)

// Type names a selector may ask for.
const (
	TypeAny    = "any"
	TypeString = "string"
	TypeNumber = "number"
	TypeBool   = "bool"
	TypeList   = "list"
	TypeMap    = "map"
	TypeObject = "object"
)

// DefaultType is the Type recorded for an output that came from defaults.
const DefaultType = "default"

// Selector picks one output, the type it must have and its key.
type Selector struct {
	// Name of the output in the state.
	Name string
	// Type it must have; "" means TypeAny.
	Type string
	// Key to publish it under; "" means Name.
	Key string
}

// Value is one output ready to publish.
type Value struct {
	// Name of the output.
	Name string
	// Key to publish it under.
	Key string
	// Type as Terraform recorded it, compact JSON such as "string" or
	// ["list","string"], or DefaultType.
	Type string
	// Sensitive outputs go only to the Secret.
	Sensitive bool
	// Data is the value: a string raw, anything else as compact JSON.
	Data []byte
}

// MissingError is a selected output found in neither the state nor the
// defaults.
type MissingError struct{ Name string }

func (e *MissingError) Error() string {
	return fmt.Sprintf("output %q is not in the state and has no default", e.Name)
}

// TypeMismatchError is a selected output of another type than asked for.
type TypeMismatchError struct {
	// Name of the output.
	Name string
	// Want is the type the selector asked for; Got the output's type.
	Want, Got string
}

func (e *TypeMismatchError) Error() string {
	return fmt.Sprintf("output %q is a %s, not a %s", e.Name, e.Got, e.Want)
}

// KeyError is an output that cannot be published under its key: the API
// server refuses it as a ConfigMap or Secret key.
type KeyError struct {
	// Name of the output.
	Name string
	// Key it would be published under.
	Key string
}

func (e *KeyError) Error() string {
	return fmt.Sprintf("output %q cannot be published: %q is not a valid ConfigMap or Secret key (letters, digits, '-', '_' and '.', at most 253 characters, not '.' or '..')", e.Name, e.Key)
}

// ErrInvalidDefault is wrapped by errors about a default that is not JSON.
var ErrInvalidDefault = errors.New("invalid default")

// candidate is an output before selection.
type candidate struct {
	value     json.RawMessage
	typeJSON  json.RawMessage
	sensitive bool
	fromState bool
}

// Select merges defaults and the state's outputs (the state wins), then
// returns the selected outputs, or all of them sorted by name when
// selectors is empty. Errors name the output and the types, never a value.
func Select(state *statefile.State, defaults map[string]json.RawMessage, selectors []Selector) ([]Value, error) {
	merged := make(map[string]candidate, len(defaults)+len(state.Outputs))
	for name, raw := range defaults {
		if !json.Valid(raw) {
			return nil, fmt.Errorf("%w %q: not JSON", ErrInvalidDefault, name)
		}
		merged[name] = candidate{value: raw}
	}
	for name, out := range state.Outputs {
		merged[name] = candidate{value: out.Value, typeJSON: out.Type, sensitive: out.Sensitive, fromState: true}
	}

	if len(selectors) == 0 {
		names := make([]string, 0, len(merged))
		for name := range merged {
			names = append(names, name)
		}
		sort.Strings(names)
		for _, name := range names {
			selectors = append(selectors, Selector{Name: name})
		}
	}

	values := make([]Value, 0, len(selectors))
	for _, sel := range selectors {
		c, ok := merged[sel.Name]
		if !ok {
			return nil, &MissingError{Name: sel.Name}
		}
		v, err := selectOne(sel, c)
		if err != nil {
			return nil, err
		}
		values = append(values, v)
	}
	return values, nil
}

// selectOne checks one candidate's type and encodes it.
func selectOne(sel Selector, c candidate) (Value, error) {
	kind, typeName, err := kindOf(c)
	if err != nil {
		return Value{}, fmt.Errorf("output %q: %w", sel.Name, err)
	}
	want := sel.Type
	if want == "" {
		want = TypeAny
	}
	if !matches(want, kind) {
		return Value{}, &TypeMismatchError{Name: sel.Name, Want: want, Got: string(kind)}
	}
	data, err := encode(c.value)
	if err != nil {
		return Value{}, fmt.Errorf("output %q: %w", sel.Name, err)
	}
	key := sel.Key
	if key == "" {
		key = sel.Name
	}
	if len(validation.IsConfigMapKey(key)) > 0 {
		return Value{}, &KeyError{Name: sel.Name, Key: key}
	}
	return Value{Name: sel.Name, Key: key, Type: typeName, Sensitive: c.sensitive, Data: data}, nil
}

// kindOf returns an output's kind and its type for status. Defaults and
// "dynamic" outputs carry no useful type, so their kind comes from the
// JSON value.
func kindOf(c candidate) (statefile.TypeKind, string, error) {
	typeName := DefaultType
	if c.fromState {
		var buf bytes.Buffer
		if err := json.Compact(&buf, c.typeJSON); err != nil {
			return "", "", fmt.Errorf("type is not JSON: %w", err)
		}
		typeName = buf.String()
		kind, err := statefile.Kind(c.typeJSON)
		if err != nil {
			return "", "", err
		}
		if kind != statefile.KindDynamic {
			return kind, typeName, nil
		}
	}
	return valueKind(c.value), typeName, nil
}

// valueKind infers a kind from a JSON value.
func valueKind(raw json.RawMessage) statefile.TypeKind {
	trimmed := bytes.TrimSpace(raw)
	if len(trimmed) == 0 {
		return statefile.KindDynamic
	}
	switch trimmed[0] {
	case '"':
		return statefile.KindString
	case '[':
		return statefile.KindList
	case '{':
		return statefile.KindObject
	case 't', 'f':
		return statefile.KindBool
	case 'n':
		return statefile.KindDynamic
	default:
		return statefile.KindNumber
	}
}

// matches reports whether an output of kind satisfies the wanted type, as
// the typed readers convert: a map reader accepts objects and maps alike.
func matches(want string, kind statefile.TypeKind) bool {
	switch want {
	case TypeAny:
		return true
	case TypeMap:
		return kind == statefile.KindMap || kind == statefile.KindObject
	case TypeObject:
		return kind == statefile.KindObject || kind == statefile.KindMap
	default:
		return string(kind) == want
	}
}

// encode writes a string raw and anything else as compact JSON.
func encode(raw json.RawMessage) ([]byte, error) {
	trimmed := bytes.TrimSpace(raw)
	if len(trimmed) > 0 && trimmed[0] == '"' {
		var s string
		// The decoder's message could quote the value, which may be
		// sensitive: report the problem without it.
		if json.Unmarshal(trimmed, &s) != nil {
			return nil, errors.New("value is not a JSON string")
		}
		return []byte(s), nil
	}
	var buf bytes.Buffer
	if json.Compact(&buf, trimmed) != nil {
		return nil, errors.New("value is not JSON")
	}
	return buf.Bytes(), nil
}

// Split divides values into the ConfigMap's data (plain outputs) and the
// Secret's data (sensitive outputs).
func Split(values []Value) (plain map[string]string, sensitive map[string][]byte) {
	plain, sensitive = map[string]string{}, map[string][]byte{}
	for _, v := range values {
		if v.Sensitive {
			sensitive[v.Key] = v.Data
		} else {
			plain[v.Key] = string(v.Data)
		}
	}
	return plain, sensitive
}
