package redact

import (
	"encoding/json"
	"errors"
	"fmt"
)

// JSONError returns err, an error of encoding/json, with a message that
// says where the input went wrong without quoting it: encoding/json's own
// messages quote the bytes they could not read, which a server chose.
func JSONError(err error) error {
	var (
		syntax *json.SyntaxError
		typ    *json.UnmarshalTypeError
	)
	switch {
	case err == nil:
		return nil
	case errors.As(err, &syntax):
		return Error(err, fmt.Sprintf("syntax error at byte %d", syntax.Offset))
	case errors.As(err, &typ):
		return Error(err, fmt.Sprintf("a value of the wrong type at byte %d", typ.Offset))
	}
	return Error(err, "a field has an invalid value")
}
