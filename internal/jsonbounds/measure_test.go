package jsonbounds

import (
	"errors"
	"strings"
	"testing"
)

func TestMeasure(t *testing.T) {
	errOdd := errors.New("odd number")
	bounds := Bounds{MaxDepth: 2, MaxMembers: 3, MaxString: 5, MaxKey: 4,
		Number: func(literal string) error {
			if literal == "7" {
				return errOdd
			}
			return nil
		}}
	cases := map[string]struct {
		raw      string
		bounds   Bounds
		wantSize int
		wantErr  error
		wantMsg  string
	}{
		"a string":                {raw: `"abc"`, wantSize: 3},
		"a multibyte string":      {raw: `"éé"`, wantSize: 4},
		"a string at the bound":   {raw: `"abcde"`, wantSize: 5},
		"a string too long":       {raw: `"abcdef"`, wantErr: ErrStringTooLong},
		"multibyte too long":      {raw: `"ééé"`, wantErr: ErrStringTooLong},
		"scalars":                 {raw: `[1, true, null]`, wantSize: 3 * ScalarSize},
		"keys count":              {raw: `{"ab": "c"}`, wantSize: 3},
		"a key at the bound":      {raw: `{"abcd": 1}`, wantSize: 4 + ScalarSize},
		"a key too long":          {raw: `{"abcde": 1}`, wantErr: ErrKeyTooLong},
		"keys unbounded":          {raw: `{"abcdefgh": 1}`, bounds: Bounds{MaxDepth: 1, MaxMembers: 1, MaxString: 1}, wantSize: 8 + ScalarSize},
		"members at the bound":    {raw: `[1, 2, 3]`, wantSize: 3 * ScalarSize},
		"too many members":        {raw: `[1, 2, 3, 4]`, wantErr: ErrTooManyMembers},
		"too many object members": {raw: `{"a":1,"b":2,"c":3,"d":4}`, wantErr: ErrTooManyMembers},
		"nested lists count":      {raw: `[[1], [2], [3], [4]]`, wantErr: ErrTooManyMembers},
		"members after a nested":  {raw: `{"a": [1, 2, 3], "b": 1, "c": 2}`, wantSize: 3 + 5*ScalarSize},
		"members after nested 2":  {raw: `{"a": [1, 2, 3], "b": 1, "c": 2, "d": 3}`, wantErr: ErrTooManyMembers},
		"depth at the bound":      {raw: `{"a": {"b": "c"}, "d": ["e"]}`, wantSize: 5},
		"too deep":                {raw: `[[[1]]]`, wantErr: ErrTooDeep},
		"depth zero":              {raw: `[]`, bounds: Bounds{MaxString: 1}, wantErr: ErrTooDeep},
		"deep beyond any stack":   {raw: strings.Repeat("[", 1<<20), wantErr: ErrTooDeep},
		"number checked":          {raw: `[1, 7]`, wantErr: errOdd},
		"empty":                   {raw: ``, wantErr: ErrNotJSON, wantMsg: "the value is empty"},
		"blank":                   {raw: `  `, wantErr: ErrNotJSON, wantMsg: "the value is empty"},
		"unfinished":              {raw: `[1, 2`, wantErr: ErrNotJSON, wantMsg: "ends before it is complete"},
		"trailing data":           {raw: `1 2`, wantErr: ErrNotJSON, wantMsg: "data follows the value"},
		"syntax":                  {raw: `{"k": secret-word}`, wantErr: ErrNotJSON, wantMsg: "syntax error at byte"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			b := bounds
			if tc.bounds.MaxString != 0 {
				b = tc.bounds
			}
			size, err := Measure([]byte(tc.raw), b)
			if !errors.Is(err, tc.wantErr) || (tc.wantErr == nil) != (err == nil) {
				t.Fatalf("Measure(%.40q) error = %v, want %v", tc.raw, err, tc.wantErr)
			}
			if err != nil {
				if !strings.Contains(err.Error(), tc.wantMsg) || strings.Contains(err.Error(), "secret-word") {
					t.Errorf("Measure(%.40q) error = %q, want it to say %q and quote nothing", tc.raw, err, tc.wantMsg)
				}
				return
			}
			if size != tc.wantSize {
				t.Errorf("Measure(%.40q) = %d, want %d", tc.raw, size, tc.wantSize)
			}
		})
	}
}

// FuzzMeasure checks that Measure never panics and that what it accepts
// is valid JSON within the depth bound.
func FuzzMeasure(f *testing.F) {
	for _, seed := range []string{`1`, `"a"`, `[1,[2]]`, `{"a":{"b":null}}`, `[[[`, `{"a" 1}`} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, raw []byte) {
		b := Bounds{MaxDepth: 2, MaxMembers: 4, MaxString: 16, MaxKey: 8}
		size, err := Measure(raw, b)
		if err != nil {
			return
		}
		if size < 0 || size > len(raw)*ScalarSize {
			t.Fatalf("Measure(%q) = %d, out of range", raw, size)
		}
	})
}
