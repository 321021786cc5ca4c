package render

import (
	"errors"
	"strings"
	"testing"

	backendsv1alpha1 "github.com/infrastate/backend-operator/api/v1alpha1"
)

func TestOverrideErrors(t *testing.T) {
	const secret = "hunter2-do-not-echo"
	cases := map[string]struct {
		overrides []backendsv1alpha1.Override
		cos       bool // render a CosBackend (with an assume_role block) instead of an HttpBackend
		noRole    bool // leave the CosBackend's assume_role block out
		wantErr   []error
		wantMsg   string // a substring of the error
	}{
		"password": {
			overrides: []backendsv1alpha1.Override{overrideJSON("password", `"`+secret+`"`)},
			wantErr:   []error{ErrInvalidOverride, ErrCredentialOverride},
			wantMsg:   `"password"`,
		},
		"client_certificate_pem": {
			overrides: []backendsv1alpha1.Override{overrideJSON("client_certificate_pem", `"x"`)},
			wantErr:   []error{ErrInvalidOverride, ErrCredentialOverride},
		},
		"client_private_key_pem": {
			overrides: []backendsv1alpha1.Override{overrideJSON("client_private_key_pem", `"x"`)},
			wantErr:   []error{ErrInvalidOverride, ErrCredentialOverride},
		},
		"client_ca_certificate_pem": {
			overrides: []backendsv1alpha1.Override{overrideJSON("client_ca_certificate_pem", `"x"`)},
			wantErr:   []error{ErrInvalidOverride, ErrCredentialOverride},
		},
		"secret_id": {
			cos:       true,
			overrides: []backendsv1alpha1.Override{overrideJSON("secret_id", `"x"`)},
			wantErr:   []error{ErrInvalidOverride, ErrCredentialOverride},
		},
		"secret_key": {
			cos:       true,
			overrides: []backendsv1alpha1.Override{overrideJSON("secret_key", `"`+secret+`"`)},
			wantErr:   []error{ErrInvalidOverride, ErrCredentialOverride},
		},
		"security_token": {
			cos:       true,
			overrides: []backendsv1alpha1.Override{overrideJSON("security_token", `"x"`)},
			wantErr:   []error{ErrInvalidOverride, ErrCredentialOverride},
		},
		"credential inside a block": {
			cos:       true,
			overrides: []backendsv1alpha1.Override{overrideJSON("assume_role.secret_key", `"x"`)},
			wantErr:   []error{ErrInvalidOverride, ErrCredentialOverride},
		},
		"invalid JSON": {
			overrides: []backendsv1alpha1.Override{overrideJSON("future", `{"token": "`+secret+`"`)},
			wantErr:   []error{ErrInvalidOverride},
			wantMsg:   `path "future": value is not valid JSON`,
		},
		"invalid JSON at a character": {
			overrides: []backendsv1alpha1.Override{overrideJSON("future", secret)},
			wantErr:   []error{ErrInvalidOverride},
			wantMsg:   "syntax error at byte",
		},
		"trailing data": {
			overrides: []backendsv1alpha1.Override{overrideJSON("future", `"a" "`+secret+`"`)},
			wantErr:   []error{ErrInvalidOverride},
			wantMsg:   "not valid JSON",
		},
		"duplicate key": {
			overrides: []backendsv1alpha1.Override{overrideJSON("future", `{"`+secret+`": 1, "`+secret+`": "two"}`)},
			wantErr:   []error{ErrInvalidOverride},
			wantMsg:   "repeats a key",
		},
		"empty value": {
			overrides: []backendsv1alpha1.Override{{Path: "future"}},
			wantErr:   []error{ErrInvalidOverride},
			wantMsg:   "empty",
		},
		"upper-case path": {
			overrides: []backendsv1alpha1.Override{overrideJSON("Address", `"x"`)},
			wantErr:   []error{ErrInvalidOverride},
		},
		"path injecting HCL": {
			overrides: []backendsv1alpha1.Override{overrideJSON("x = 1\npassword", `"x"`)},
			wantErr:   []error{ErrInvalidOverride},
		},
		"empty segment": {
			overrides: []backendsv1alpha1.Override{overrideJSON("a..b", `"x"`)},
			wantErr:   []error{ErrInvalidOverride},
		},
		"empty path": {
			overrides: []backendsv1alpha1.Override{overrideJSON("", `"x"`)},
			wantErr:   []error{ErrInvalidOverride},
		},
		"a string over a block": {
			cos:       true,
			overrides: []backendsv1alpha1.Override{overrideJSON("assume_role", `"`+secret+`"`)},
			wantErr:   []error{ErrInvalidOverride},
			wantMsg:   `path "assume_role": "assume_role" is a block: the value must be an object`,
		},
		"null over a block": {
			cos:       true,
			overrides: []backendsv1alpha1.Override{overrideJSON("assume_role", `null`)},
			wantErr:   []error{ErrInvalidOverride},
			wantMsg:   `the value must be an object`,
		},
		"an empty list at a block the spec does not set": {
			cos:       true,
			noRole:    true,
			overrides: []backendsv1alpha1.Override{overrideJSON("assume_role", `[]`)},
			wantErr:   []error{ErrInvalidOverride},
			wantMsg:   `the value must be an object`,
		},
		"a block key that is no attribute name": {
			cos:       true,
			overrides: []backendsv1alpha1.Override{overrideJSON("assume_role", `{"`+secret+` x": "y"}`)},
			wantErr:   []error{ErrInvalidOverride},
			wantMsg:   `the keys of the value must be lower-case attribute names`,
		},
		"a block key naming a credential": {
			cos:       true,
			overrides: []backendsv1alpha1.Override{overrideJSON("assume_role", `{"secret_key": "`+secret+`"}`)},
			wantErr:   []error{ErrInvalidOverride, ErrCredentialOverride},
			wantMsg:   `a key of the value names a credential attribute`,
		},
		"a block key naming a nested block": {
			cos:       true,
			overrides: []backendsv1alpha1.Override{overrideJSON("assume_role.inner.x", `1`), overrideJSON("assume_role", `{"inner": "`+secret+`"}`)},
			wantErr:   []error{ErrInvalidOverride},
			wantMsg:   `a key of the value names a block nested in it`,
		},
		"an object over a block made by a dotted path": {
			overrides: []backendsv1alpha1.Override{overrideJSON("future.x", `1`), overrideJSON("future", `["`+secret+`"]`)},
			wantErr:   []error{ErrInvalidOverride},
			wantMsg:   `"future" is a block`,
		},
		"block under an attribute": {
			overrides: []backendsv1alpha1.Override{overrideJSON("address.x", `"x"`)},
			wantErr:   []error{ErrInvalidOverride},
			wantMsg:   `"address" is an attribute`,
		},
		"block under an overridden attribute": {
			overrides: []backendsv1alpha1.Override{overrideJSON("future", `1`), overrideJSON("future.x", `2`)},
			wantErr:   []error{ErrInvalidOverride},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			var err error
			if tc.cos {
				spec := cosCases()["assume_role"]
				if tc.noRole {
					spec.AssumeRole = nil
				}
				spec.Overrides = tc.overrides
				_, err = CosFiles(spec, testRegion)
			} else {
				_, err = HTTPFiles(backendsv1alpha1.HttpBackendSpec{Address: testAddress, Overrides: tc.overrides})
			}
			if err == nil {
				t.Fatal("rendering succeeded, want an error")
			}
			for _, want := range tc.wantErr {
				if !errors.Is(err, want) {
					t.Errorf("error %q is not %q", err, want)
				}
			}
			if !strings.Contains(err.Error(), tc.wantMsg) {
				t.Errorf("error %q does not contain %q", err, tc.wantMsg)
			}
			if strings.Contains(err.Error(), secret) || strings.Contains(err.Error(), secret[:1]+"'") {
				t.Errorf("error %q echoes the value", err)
			}
		})
	}
}

// TestOverrideValues checks the decoding of each JSON value kind and the
// placement of overrides.
func TestOverrideValues(t *testing.T) {
	cases := map[string]struct {
		overrides []backendsv1alpha1.Override
		blocks    map[string]bool // the schema's block types
		want      string          // backend.tfbackend
	}{
		"string":  {overrides: []backendsv1alpha1.Override{overrideJSON("x", `"s"`)}, want: "x = \"s\"\n"},
		"integer": {overrides: []backendsv1alpha1.Override{overrideJSON("x", `42`)}, want: "x = 42\n"},
		"negative fraction": {
			overrides: []backendsv1alpha1.Override{overrideJSON("x", `-0.25`)}, want: "x = -0.25\n",
		},
		"large integer keeps its digits": {
			overrides: []backendsv1alpha1.Override{overrideJSON("x", `12345678901234567890123`)}, want: "x = 12345678901234567890123\n",
		},
		"bool":   {overrides: []backendsv1alpha1.Override{overrideJSON("x", `true`)}, want: "x = true\n"},
		"null":   {overrides: []backendsv1alpha1.Override{overrideJSON("x", `null`)}, want: "x = null\n"},
		"array":  {overrides: []backendsv1alpha1.Override{overrideJSON("x", `[1, "a"]`)}, want: "x = [1, \"a\"]\n"},
		"empty":  {overrides: []backendsv1alpha1.Override{overrideJSON("x", `[]`), overrideJSON("y", `{}`)}, want: "x = []\ny = {}\n"},
		"object": {overrides: []backendsv1alpha1.Override{overrideJSON("x", `{"b": 1, "a": 2}`)}, want: "x = {\n  a = 2\n  b = 1\n}\n"},
		"later override wins in place": {
			overrides: []backendsv1alpha1.Override{overrideJSON("x", `1`), overrideJSON("y", `2`), overrideJSON("x", `3`)},
			want:      "x = 3\ny = 2\n",
		},
		"nested blocks": {
			overrides: []backendsv1alpha1.Override{overrideJSON("a.b.c", `1`), overrideJSON("a.d", `2`)},
			want:      "a {\n  d = 2\n\n  b {\n    c = 1\n  }\n}\n",
		},
		"an object at a declared block is the block": {
			overrides: []backendsv1alpha1.Override{overrideJSON("blk", `{"b": 1, "a": "x"}`)},
			blocks:    map[string]bool{"blk": true},
			want:      "blk {\n  a = \"x\"\n  b = 1\n}\n",
		},
		"an object merges into a block in place": {
			overrides: []backendsv1alpha1.Override{overrideJSON("blk.c", `1`), overrideJSON("blk.a", `2`), overrideJSON("blk", `{"c": 3, "b": null}`)},
			want:      "blk {\n  c = 3\n  a = 2\n  b = null\n}\n",
		},
		"an object elsewhere is an attribute": {
			overrides: []backendsv1alpha1.Override{overrideJSON("x", `{"a": 1}`), overrideJSON("blk.x", `{"a": 1}`)},
			blocks:    map[string]bool{"blk": true},
			want:      "x = {\n  a = 1\n}\n\nblk {\n  x = {\n    a = 1\n  }\n}\n",
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			b := &body{blockTypes: tc.blocks}
			if err := applyOverrides(b, tc.overrides); err != nil {
				t.Fatal(err)
			}
			if got := string(tfbackendHCL(b)); got != tc.want {
				t.Errorf("got\n%s\nwant\n%s", got, tc.want)
			}
		})
	}
}
