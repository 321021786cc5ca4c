package render

import (
	"errors"
	"strings"
	"testing"

	"github.com/infrastate/backend-operator/api/v1alpha1"
)

func TestOverrideErrors(t *testing.T) {
	const secret = "hunter2-do-not-echo"
	cases := map[string]struct {
		overrides []v1alpha1.Override
		cos       bool // render a CosBackend (with an assume_role block) instead of an HttpBackend
		wantErr   []error
		wantMsg   string // a substring of the error
	}{
		"password": {
			overrides: []v1alpha1.Override{overrideJSON("password", `"`+secret+`"`)},
			wantErr:   []error{ErrInvalidOverride, ErrCredentialOverride},
			wantMsg:   `"password"`,
		},
		"client_certificate_pem": {
			overrides: []v1alpha1.Override{overrideJSON("client_certificate_pem", `"x"`)},
			wantErr:   []error{ErrInvalidOverride, ErrCredentialOverride},
		},
		"client_private_key_pem": {
			overrides: []v1alpha1.Override{overrideJSON("client_private_key_pem", `"x"`)},
			wantErr:   []error{ErrInvalidOverride, ErrCredentialOverride},
		},
		"client_ca_certificate_pem": {
			overrides: []v1alpha1.Override{overrideJSON("client_ca_certificate_pem", `"x"`)},
			wantErr:   []error{ErrInvalidOverride, ErrCredentialOverride},
		},
		"secret_id": {
			cos:       true,
			overrides: []v1alpha1.Override{overrideJSON("secret_id", `"x"`)},
			wantErr:   []error{ErrInvalidOverride, ErrCredentialOverride},
		},
		"secret_key": {
			cos:       true,
			overrides: []v1alpha1.Override{overrideJSON("secret_key", `"`+secret+`"`)},
			wantErr:   []error{ErrInvalidOverride, ErrCredentialOverride},
		},
		"security_token": {
			cos:       true,
			overrides: []v1alpha1.Override{overrideJSON("security_token", `"x"`)},
			wantErr:   []error{ErrInvalidOverride, ErrCredentialOverride},
		},
		"credential inside a block": {
			cos:       true,
			overrides: []v1alpha1.Override{overrideJSON("assume_role.secret_key", `"x"`)},
			wantErr:   []error{ErrInvalidOverride, ErrCredentialOverride},
		},
		"invalid JSON": {
			overrides: []v1alpha1.Override{overrideJSON("future", `{"token": "`+secret+`"`)},
			wantErr:   []error{ErrInvalidOverride},
			wantMsg:   `path "future": value is not valid JSON`,
		},
		"invalid JSON at a character": {
			overrides: []v1alpha1.Override{overrideJSON("future", secret)},
			wantErr:   []error{ErrInvalidOverride},
			wantMsg:   "syntax error at byte",
		},
		"trailing data": {
			overrides: []v1alpha1.Override{overrideJSON("future", `"a" "`+secret+`"`)},
			wantErr:   []error{ErrInvalidOverride},
			wantMsg:   "not valid JSON",
		},
		"duplicate key": {
			overrides: []v1alpha1.Override{overrideJSON("future", `{"`+secret+`": 1, "`+secret+`": "two"}`)},
			wantErr:   []error{ErrInvalidOverride},
			wantMsg:   "repeats a key",
		},
		"empty value": {
			overrides: []v1alpha1.Override{{Path: "future"}},
			wantErr:   []error{ErrInvalidOverride},
			wantMsg:   "empty",
		},
		"upper-case path": {
			overrides: []v1alpha1.Override{overrideJSON("Address", `"x"`)},
			wantErr:   []error{ErrInvalidOverride},
		},
		"path injecting HCL": {
			overrides: []v1alpha1.Override{overrideJSON("x = 1\npassword", `"x"`)},
			wantErr:   []error{ErrInvalidOverride},
		},
		"empty segment": {
			overrides: []v1alpha1.Override{overrideJSON("a..b", `"x"`)},
			wantErr:   []error{ErrInvalidOverride},
		},
		"empty path": {
			overrides: []v1alpha1.Override{overrideJSON("", `"x"`)},
			wantErr:   []error{ErrInvalidOverride},
		},
		"attribute over a block": {
			cos:       true,
			overrides: []v1alpha1.Override{overrideJSON("assume_role", `{"role_arn": "x"}`)},
			wantErr:   []error{ErrInvalidOverride},
			wantMsg:   `"assume_role" is a block`,
		},
		"block under an attribute": {
			overrides: []v1alpha1.Override{overrideJSON("address.x", `"x"`)},
			wantErr:   []error{ErrInvalidOverride},
			wantMsg:   `"address" is an attribute`,
		},
		"block under an overridden attribute": {
			overrides: []v1alpha1.Override{overrideJSON("future", `1`), overrideJSON("future.x", `2`)},
			wantErr:   []error{ErrInvalidOverride},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			var err error
			if tc.cos {
				spec := cosCases()["assume_role"]
				spec.Overrides = tc.overrides
				_, err = CosFiles(spec, testRegion)
			} else {
				_, err = HTTPFiles(v1alpha1.HttpBackendSpec{Address: testAddress, Overrides: tc.overrides})
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
		overrides []v1alpha1.Override
		want      string // backend.tfbackend
	}{
		"string":  {[]v1alpha1.Override{overrideJSON("x", `"s"`)}, "x = \"s\"\n"},
		"integer": {[]v1alpha1.Override{overrideJSON("x", `42`)}, "x = 42\n"},
		"negative fraction": {
			[]v1alpha1.Override{overrideJSON("x", `-0.25`)}, "x = -0.25\n",
		},
		"large integer keeps its digits": {
			[]v1alpha1.Override{overrideJSON("x", `12345678901234567890123`)}, "x = 12345678901234567890123\n",
		},
		"bool":   {[]v1alpha1.Override{overrideJSON("x", `true`)}, "x = true\n"},
		"null":   {[]v1alpha1.Override{overrideJSON("x", `null`)}, "x = null\n"},
		"array":  {[]v1alpha1.Override{overrideJSON("x", `[1, "a"]`)}, "x = [1, \"a\"]\n"},
		"empty":  {[]v1alpha1.Override{overrideJSON("x", `[]`), overrideJSON("y", `{}`)}, "x = []\ny = {}\n"},
		"object": {[]v1alpha1.Override{overrideJSON("x", `{"b": 1, "a": 2}`)}, "x = {\n  a = 2\n  b = 1\n}\n"},
		"later override wins in place": {
			[]v1alpha1.Override{overrideJSON("x", `1`), overrideJSON("y", `2`), overrideJSON("x", `3`)},
			"x = 3\ny = 2\n",
		},
		"nested blocks": {
			[]v1alpha1.Override{overrideJSON("a.b.c", `1`), overrideJSON("a.d", `2`)},
			"a {\n  d = 2\n\n  b {\n    c = 1\n  }\n}\n",
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			b := &body{}
			if err := applyOverrides(b, tc.overrides); err != nil {
				t.Fatal(err)
			}
			if got := string(tfbackendHCL(b)); got != tc.want {
				t.Errorf("got\n%s\nwant\n%s", got, tc.want)
			}
		})
	}
}
