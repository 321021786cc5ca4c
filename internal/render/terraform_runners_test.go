package render

import (
	"crypto/tls"
	"encoding/pem"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"

	"k8s.io/utils/ptr"

	backendsv1alpha1 "github.com/infrastate/backend-operator/api/v1alpha1"
	"github.com/infrastate/backend-operator/internal/stateserver"
	"github.com/infrastate/backend-operator/internal/testtools"
)

// featureProof runs runner on files that need one feature of the runner
// table, and tells whether the runner read it as the operator means it,
// with the runner's output. It fails the test when the outcome is neither.
type featureProof func(t *testing.T, runner testtools.Runner) (read bool, output string)

// featureProofs prove each row of the runner table with the real binaries.
// TestRunnerTable fails when a row has none.
var featureProofs = map[FeatureID]featureProof{
	FeatureCosEndpoint: cosAttributeProof("endpoint",
		backendsv1alpha1.CosBackendSpec{Bucket: testBucket, Endpoint: "https://cos-internal.ap-guangzhou.tencentcos.cn"}),
	FeatureCosDomain: cosAttributeProof("domain",
		backendsv1alpha1.CosBackendSpec{Bucket: testBucket, Domain: "internal.tencentcloudapi.com"}),
	FeatureCosExternalID: cosAttributeProof("external_id",
		backendsv1alpha1.CosBackendSpec{Bucket: testBucket, AssumeRole: &backendsv1alpha1.AssumeRole{RoleArn: "r", SessionName: "s-1", ExternalID: "e"}}),
	FeatureCosAccelerate: cosAttributeProof("accelerate",
		backendsv1alpha1.CosBackendSpec{Bucket: testBucket, Accelerate: new(true)}),
	FeatureCosAssumeRole: cosAttributeProof("assume_role",
		backendsv1alpha1.CosBackendSpec{Bucket: testBucket, AssumeRole: &backendsv1alpha1.AssumeRole{RoleArn: "r", SessionName: "s-1"}}),
	FeatureHTTPHeaders:           headersProof,
	FeatureHTTPClientCertificate: mutualTLSProof,
	FeatureHTTPClientCA:          mutualTLSProof,
	FeatureJSONLiteralTemplates:  jsonTemplateProof(nil),
	FeatureJSONEscapedTemplates:  jsonTemplateProof(&backendsv1alpha1.Runner{Flavor: backendsv1alpha1.RunnerOpenTofu}),
	FeatureStateEncryption:       stateEncryptionProof,
}

// TestRunnerTable proves every row of the runner table (Features) with
// the terraform and tofu binaries the tests run: each reads a feature's
// files as meant exactly when the row's range holds its version.
func TestRunnerTable(t *testing.T) {
	runners := testtools.Runners(t)
	versions := make(map[string]Version, len(runners))
	for _, runner := range runners {
		v, err := ParseVersion(runner.Version(t))
		if err != nil {
			t.Fatal(err)
		}
		versions[runner.Name] = v
	}
	for _, f := range Features {
		proof, ok := featureProofs[f.ID]
		if !ok {
			t.Errorf("feature %s has no proof in featureProofs", f.ID)
			continue
		}
		for _, runner := range runners {
			version := versions[runner.Name]
			t.Run(string(f.ID)+"/"+runner.Name, func(t *testing.T) {
				t.Parallel()
				support, known := f.Support[backendsv1alpha1.RunnerFlavor(runner.Flavor)]
				want := known && support.contains(version)
				got, out := proof(t, runner)
				if got != want {
					t.Errorf("%s %s read %s: %t, the table says %t; output:\n%s", runner.Name, version, f.ID, got, want, out)
				}
			})
		}
	}
}

// cosAttributeProof renders spec, which sets the cos attribute attr, and
// runs init on backend.tf behind the refusing proxy (see initVerdict):
// the runner read attr when it accepted the configuration and went on to
// contact COS or STS, and did not when it refused attr by name.
func cosAttributeProof(attr string, spec backendsv1alpha1.CosBackendSpec) featureProof {
	return func(t *testing.T, runner testtools.Runner) (bool, string) {
		t.Helper()
		files, err := CosFiles(spec, testRegion)
		if err != nil {
			t.Fatal(err)
		}
		got, out := initVerdict(t, runner, layouts[BackendTFKey], files, "cos")
		if got == refusedByTerraform && !strings.Contains(out, `named "`+attr+`"`) {
			t.Fatalf("%s init refused the configuration without naming %s:\n%s", runner.Name, attr, out)
		}
		return got == accepted, out
	}
}

// mutualTLSProof runs init and apply with an HttpBackend whose server
// requires a client certificate and is trusted only through the rendered
// CA bundle: the runner read both when the apply stored the state.
func mutualTLSProof(t *testing.T, runner testtools.Runner) (bool, string) {
	t.Helper()
	client := newClientCert(t)
	srv := httptest.NewUnstartedServer(stateserver.New(stateserver.NewMemoryStore()))
	srv.TLS = &tls.Config{ClientAuth: tls.RequireAndVerifyClientCert, ClientCAs: client.pool}
	srv.StartTLS()
	t.Cleanup(srv.Close)
	spec := backendsv1alpha1.HttpBackendSpec{
		Address:  srv.URL + statePath,
		RetryMax: ptr.To[int32](0),
		TLS: &backendsv1alpha1.HttpBackendTLS{
			ClientCertificateSecretRef: &backendsv1alpha1.LocalSecretRef{Name: "tls"},
			CACertificate:              &backendsv1alpha1.CACertificateSource{SecretRef: &backendsv1alpha1.LocalSecretRef{Name: "ca"}},
		},
	}
	files, err := HTTPFiles(spec)
	if err != nil {
		t.Fatal(err)
	}
	creds := HTTPCredentials(HTTPSecrets{
		ClientCertificatePEM:   client.certPEM,
		ClientPrivateKeyPEM:    client.keyPEM,
		ClientCACertificatePEM: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: srv.Certificate().Raw}),
	})
	w := newWorkdir(t, runner, layouts[BackendTFKey].files(files, "http"), creds)
	if out, err := w.Run(t, "init", "-input=false", "-no-color"); err != nil {
		return false, out
	}
	out, err := w.Run(t, "apply", "-auto-approve", "-input=false", "-no-color")
	return err == nil, out
}

// templatedQuery is a query string holding both template introducers.
const templatedQuery = "a=${x}&b=%{y}"

// jsonTemplateProof renders, for runner (nil: for no runner in
// particular), an HttpBackend whose address holds "${" and "%{", and runs
// init and apply on backend.tf.json alone: the runner read the address as
// meant when the state server received exactly that query.
func jsonTemplateProof(runner *backendsv1alpha1.Runner) featureProof {
	return func(t *testing.T, cli testtools.Runner) (bool, string) {
		t.Helper()
		var rec seen
		srv := httptest.NewServer(rec.wrap(stateserver.New(stateserver.NewMemoryStore())))
		t.Cleanup(srv.Close)
		files, err := HTTPFiles(backendsv1alpha1.HttpBackendSpec{Address: srv.URL + statePath + "?" + templatedQuery, BackendCommonSpec: backendsv1alpha1.BackendCommonSpec{Runner: runner}})
		if err != nil {
			t.Fatal(err)
		}
		w := newWorkdir(t, cli, layouts[BackendTFJSONKey].files(files, "http"), nil)
		out, err := w.Run(t, "init", "-input=false", "-no-color")
		if err == nil {
			var applyOut string
			applyOut, err = w.Run(t, "apply", "-auto-approve", "-input=false", "-no-color")
			out += applyOut
		}
		rec.mu.Lock()
		defer rec.mu.Unlock()
		if err != nil {
			if len(rec.requests) > 0 {
				t.Fatalf("%s failed after reaching the server with %q:\n%s", cli.Name, rec.requests, out)
			}
			return false, out
		}
		asMeant := slices.ContainsFunc(rec.requests, func(r string) bool {
			_, query, _ := strings.Cut(r, "?")
			return query == templatedQuery
		})
		return asMeant, out + "\nrequests: " + strings.Join(rec.requests, " | ")
	}
}

// headersProof runs init and apply with an HttpBackend whose override sets
// headers: the runner read them when the state server received the header,
// and did not when it refused the attribute by name.
func headersProof(t *testing.T, runner testtools.Runner) (bool, string) {
	t.Helper()
	var rec seen
	srv := httptest.NewServer(rec.wrap(stateserver.New(stateserver.NewMemoryStore())))
	t.Cleanup(srv.Close)
	files, err := HTTPFiles(backendsv1alpha1.HttpBackendSpec{Address: srv.URL + statePath,
		Overrides: []backendsv1alpha1.Override{overrideJSON("headers", `{"X-Stack": "network"}`)}})
	if err != nil {
		t.Fatal(err)
	}
	w := newWorkdir(t, runner, layouts[BackendTFKey].files(files, "http"), nil)
	out, err := w.Run(t, "init", "-input=false", "-no-color")
	if err != nil {
		if strings.Contains(out, `named "headers"`) {
			return false, out
		}
		t.Fatalf("%s init failed without refusing headers:\n%s", runner.Name, out)
	}
	rec.mu.Lock()
	defer rec.mu.Unlock()
	return slices.ContainsFunc(rec.headers, func(h http.Header) bool { return h.Get("X-Stack") == "network" }), out
}
