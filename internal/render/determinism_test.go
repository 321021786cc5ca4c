package render

import (
	"bytes"
	"strconv"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	backendsv1alpha1 "github.com/infrastate/backend-operator/api/v1alpha1"
)

// TestDeterministic renders every case many times: the bytes and objects
// must never change (no map iteration order may leak into the output).
func TestDeterministic(t *testing.T) {
	const rounds = 20
	render := map[string]func() (Files, error){}
	for name, spec := range httpCases() {
		render["http/"+name] = func() (Files, error) { return HTTPFiles(spec) }
	}
	for name, spec := range cosCases() {
		render["cos/"+name] = func() (Files, error) { return CosFiles(spec, testRegion) }
	}
	// An object with many keys, where a map iteration would show.
	var obj strings.Builder
	obj.WriteString("{")
	for i := range 50 {
		if i > 0 {
			obj.WriteString(",")
		}
		obj.WriteString(`"k` + string(rune('a'+i%26)) + string(rune('a'+i/26)) + `": ` + strconv.Itoa(i))
	}
	obj.WriteString("}")
	render["many keys"] = func() (Files, error) {
		return HTTPFiles(backendsv1alpha1.HttpBackendSpec{Address: testAddress, Overrides: []backendsv1alpha1.Override{overrideJSON("x", obj.String())}})
	}

	for name, fn := range render {
		t.Run(name, func(t *testing.T) {
			first, err := fn()
			if err != nil {
				t.Fatal(err)
			}
			cm := ConfigMap(testOwner, "c", first)
			secret := CredentialsSecret(testOwner, "s", HTTPCredentials(HTTPSecrets{Password: []byte("pw"), ClientCACertificatePEM: []byte("ca")}))
			for range rounds {
				again, err := fn()
				if err != nil {
					t.Fatal(err)
				}
				if !bytes.Equal(first.BackendTF, again.BackendTF) || !bytes.Equal(first.BackendTFJSON, again.BackendTFJSON) || !bytes.Equal(first.BackendTFBackend, again.BackendTFBackend) {
					t.Fatalf("rendering twice gave different bytes:\n%s", cmp.Diff(first, again))
				}
				if diff := cmp.Diff(cm, ConfigMap(testOwner, "c", again)); diff != "" {
					t.Fatalf("ConfigMap differs:\n%s", diff)
				}
				if diff := cmp.Diff(secret, CredentialsSecret(testOwner, "s", HTTPCredentials(HTTPSecrets{Password: []byte("pw"), ClientCACertificatePEM: []byte("ca")}))); diff != "" {
					t.Fatalf("Secret differs:\n%s", diff)
				}
			}
		})
	}
}
