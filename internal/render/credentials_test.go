package render

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestHTTPCredentials(t *testing.T) {
	cases := map[string]struct {
		in   HTTPSecrets
		want map[string][]byte
	}{
		"none": {want: map[string][]byte{}},
		"password": {
			in:   HTTPSecrets{Password: []byte("pw")},
			want: map[string][]byte{"TF_HTTP_PASSWORD": []byte("pw")},
		},
		"empty values are left out": {
			in:   HTTPSecrets{Password: []byte{}, ClientCACertificatePEM: []byte("ca")},
			want: map[string][]byte{"TF_HTTP_CLIENT_CA_CERTIFICATE_PEM": []byte("ca")},
		},
		"everything": {
			in: HTTPSecrets{
				Password:               []byte("pw"),
				ClientCertificatePEM:   []byte("cert"),
				ClientPrivateKeyPEM:    []byte("key"),
				ClientCACertificatePEM: []byte("ca"),
			},
			want: map[string][]byte{
				"TF_HTTP_PASSWORD":                  []byte("pw"),
				"TF_HTTP_CLIENT_CERTIFICATE_PEM":    []byte("cert"),
				"TF_HTTP_CLIENT_PRIVATE_KEY_PEM":    []byte("key"),
				"TF_HTTP_CLIENT_CA_CERTIFICATE_PEM": []byte("ca"),
			},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, HTTPCredentials(tc.in)); diff != "" {
				t.Errorf("HTTPCredentials (-want +got):\n%s", diff)
			}
		})
	}
}

func TestCosCredentials(t *testing.T) {
	cases := map[string]struct {
		in   CosSecrets
		want map[string][]byte
	}{
		"none": {want: map[string][]byte{}},
		"key pair": {
			in: cosSecrets("id", "key", ""),
			want: map[string][]byte{
				"TENCENTCLOUD_SECRET_ID":  []byte("id"),
				"TENCENTCLOUD_SECRET_KEY": []byte("key"),
			},
		},
		"temporary credentials": {
			in: cosSecrets("id", "key", "token"),
			want: map[string][]byte{
				"TENCENTCLOUD_SECRET_ID":      []byte("id"),
				"TENCENTCLOUD_SECRET_KEY":     []byte("key"),
				"TENCENTCLOUD_SECURITY_TOKEN": []byte("token"),
			},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, CosCredentials(tc.in)); diff != "" {
				t.Errorf("CosCredentials (-want +got):\n%s", diff)
			}
		})
	}
}

// cosSecrets builds CosSecrets from strings; empty strings stay unset.
func cosSecrets(id, key, token string) CosSecrets {
	b := func(s string) []byte {
		if s == "" {
			return nil
		}
		return []byte(s)
	}
	return CosSecrets{SecretID: b(id), SecretKey: b(key), SecurityToken: b(token)}
}

// TestCredentialsCopy checks that the maps do not alias the inputs, which
// the caller may reuse.
func TestCredentialsCopy(t *testing.T) {
	pw := []byte("pw")
	got := HTTPCredentials(HTTPSecrets{Password: pw})
	pw[0] = 'X'
	if string(got["TF_HTTP_PASSWORD"]) != "pw" {
		t.Errorf("HTTPCredentials aliases its input: %q", got["TF_HTTP_PASSWORD"])
	}
	id := []byte("id")
	cos := CosCredentials(CosSecrets{SecretID: id})
	id[0] = 'X'
	if string(cos["TENCENTCLOUD_SECRET_ID"]) != "id" {
		t.Errorf("CosCredentials aliases its input: %q", cos["TENCENTCLOUD_SECRET_ID"])
	}
}

// TestNoSecretsInFiles renders specs that reference secrets and checks that
// no credential attribute reaches any file.
func TestNoSecretsInFiles(t *testing.T) {
	forbidden := []string{"password", "client_certificate_pem", "client_private_key_pem", "client_ca_certificate_pem", "secret_id", "secret_key", "security_token", "state-password", "client-tls", "cos-credentials"}
	var all []Files
	for _, spec := range httpCases() {
		f, err := HTTPFiles(spec)
		if err != nil {
			t.Fatal(err)
		}
		all = append(all, f)
	}
	for _, spec := range cosCases() {
		f, err := CosFiles(spec, testRegion)
		if err != nil {
			t.Fatal(err)
		}
		all = append(all, f)
	}
	for _, f := range all {
		for name, content := range f.Data() {
			for _, word := range forbidden {
				if containsFold(content, word) {
					t.Errorf("%s mentions %q:\n%s", name, word, content)
				}
			}
		}
	}
}

func containsFold(s, substr string) bool {
	return strings.Contains(strings.ToLower(s), strings.ToLower(substr))
}
