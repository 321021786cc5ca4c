package stateencryption

import (
	"regexp"
	"testing"
)

func TestKeyProviderName(t *testing.T) {
	identifier := regexp.MustCompile(`^[a-zA-Z_][a-zA-Z0-9_]*$`)
	long := "a-very-long-secret-name-that-goes-on-and-on.and.on-beyond-forty-bytes"
	tests := []struct {
		name, secret, key, want string
	}{
		{name: "plain", secret: "tofu-passphrase", key: "passphrase", want: "secret_tofu_passphrase_passphrase_"},
		{name: "dots and dashes", secret: "a.b-c", key: "k.e-y", want: "secret_a_b_c_k_e_y_"},
		{name: "long name clipped", secret: long, key: "passphrase", want: "secret_a_very_long_secret_name_that_goes_on_and_passphrase_"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := KeyProviderName(tt.secret, tt.key)
			if len(got) != len(tt.want)+8 || got[:len(tt.want)] != tt.want {
				t.Errorf("KeyProviderName(%q, %q) = %q, want %q followed by 8 hex digits", tt.secret, tt.key, got, tt.want)
			}
			if !identifier.MatchString(got) {
				t.Errorf("KeyProviderName(%q, %q) = %q, not an HCL identifier", tt.secret, tt.key, got)
			}
			if again := KeyProviderName(tt.secret, tt.key); again != got {
				t.Errorf("KeyProviderName is not stable: %q then %q", got, again)
			}
		})
	}
	// References that sanitize alike keep distinct names.
	if a, b := KeyProviderName("a-b", "k"), KeyProviderName("a.b", "k"); a == b {
		t.Errorf("KeyProviderName(a-b) = KeyProviderName(a.b) = %q", a)
	}
	if a, b := KeyProviderName("s", "a/b"), KeyProviderName("s/a", "b"); a == b {
		t.Errorf("the separator is ambiguous: %q", a)
	}
}
