package render

import (
	"errors"
	"maps"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"

	"k8s.io/utils/ptr"

	backendsv1alpha1 "github.com/infrastate/backend-operator/api/v1alpha1"
	"github.com/infrastate/backend-operator/internal/stateserver"
	"github.com/infrastate/backend-operator/internal/testtools"
)

// verdict is what became of a spec's overrides.
type verdict string

const (
	// accepted: terraform read the configuration and went on to use the
	// backend (the http backend initialised against the reference
	// server; the cos backend asked the refusing proxy for COS or STS).
	accepted verdict = "accepted"
	// refusedByTerraform: terraform init failed before contacting anything.
	refusedByTerraform verdict = "refused by terraform"
	// refusedByRenderer: rendering failed with ErrInvalidOverride, so no
	// file exists to run.
	refusedByRenderer verdict = "refused by the renderer"
)

// TestTerraformOverrideVerdicts renders a backend with each kind of
// override value (string, number, bool, null, list, object), at top-level
// and dotted paths, at attributes, at the cos backend's assume_role block
// and at names Terraform does not know, and runs the real terraform init
// on each of the three layouts, with terraform and with tofu. All six must
// get the same verdict, the one the case expects: a runner must not see its
// configuration accepted or refused depending on the file it mounts.
func TestTerraformOverrideVerdicts(t *testing.T) {
	runners := testtools.Runners(t) // fail early
	role := &backendsv1alpha1.AssumeRole{RoleArn: "qcs::cam::uin/100000000001:roleName/tfstate", SessionName: "backend-operator"}
	o := overrideJSON
	cases := map[string]struct {
		http      bool // an HttpBackend; otherwise a CosBackend
		typedRole bool // the CosBackend sets spec.assumeRole
		overrides []backendsv1alpha1.Override
		want      verdict
	}{
		// Top-level paths of the cos backend.
		"cos string attribute":          {overrides: []backendsv1alpha1.Override{o("acl", `"public-read"`)}, want: accepted},
		"cos string unknown":            {overrides: []backendsv1alpha1.Override{o("future", `"x"`)}, want: refusedByTerraform},
		"cos number at a string":        {overrides: []backendsv1alpha1.Override{o("acl", `1`)}, want: refusedByTerraform},
		"cos bool attribute":            {overrides: []backendsv1alpha1.Override{o("encrypt", `true`)}, want: accepted},
		"cos bool at a number":          {typedRole: true, overrides: []backendsv1alpha1.Override{o("assume_role.session_duration", `true`)}, want: refusedByTerraform},
		"cos null attribute":            {overrides: []backendsv1alpha1.Override{o("acl", `null`)}, want: accepted},
		"cos list at a string":          {overrides: []backendsv1alpha1.Override{o("acl", `["private"]`)}, want: refusedByTerraform},
		"cos object at a string":        {overrides: []backendsv1alpha1.Override{o("acl", `{"a": "b"}`)}, want: refusedByTerraform},
		"cos object unknown":            {overrides: []backendsv1alpha1.Override{o("future", `{"a": "b"}`)}, want: refusedByTerraform},
		"cos string at the block":       {overrides: []backendsv1alpha1.Override{o("assume_role", `"x"`)}, want: refusedByRenderer},
		"cos number at the block":       {overrides: []backendsv1alpha1.Override{o("assume_role", `1`)}, want: refusedByRenderer},
		"cos bool at the block":         {overrides: []backendsv1alpha1.Override{o("assume_role", `true`)}, want: refusedByRenderer},
		"cos null at the block":         {overrides: []backendsv1alpha1.Override{o("assume_role", `null`)}, want: refusedByRenderer},
		"cos null over the typed block": {typedRole: true, overrides: []backendsv1alpha1.Override{o("assume_role", `null`)}, want: refusedByRenderer},
		"cos empty list at the block":   {overrides: []backendsv1alpha1.Override{o("assume_role", `[]`)}, want: refusedByRenderer},
		"cos list at the block":         {overrides: []backendsv1alpha1.Override{o("assume_role", `["x"]`)}, want: refusedByRenderer},
		"cos object at the block": {overrides: []backendsv1alpha1.Override{o("assume_role",
			`{"role_arn": "qcs::cam::uin/1:roleName/r", "session_name": "s", "session_duration": 3600, "policy": "{}"}`)}, want: accepted},
		"cos object merged into the typed block": {typedRole: true, overrides: []backendsv1alpha1.Override{o("assume_role", `{"policy": "{}", "session_duration": 900}`)}, want: accepted},
		"cos empty object at the block":          {overrides: []backendsv1alpha1.Override{o("assume_role", `{}`)}, want: refusedByTerraform},
		"cos object with an unknown attribute": {overrides: []backendsv1alpha1.Override{o("assume_role",
			`{"role_arn": "r", "session_name": "s", "future": "x"}`)}, want: refusedByTerraform},
		"cos object with a key that is no name": {overrides: []backendsv1alpha1.Override{o("assume_role", `{"role arn": "r", "session_name": "s"}`)}, want: refusedByRenderer},
		"cos object with a credential key":      {overrides: []backendsv1alpha1.Override{o("assume_role", `{"role_arn": "r", "session_name": "s", "secret_key": "k"}`)}, want: refusedByRenderer},

		// Dotted paths of the cos backend.
		"cos dotted string":             {typedRole: true, overrides: []backendsv1alpha1.Override{o("assume_role.policy", `"{}"`)}, want: accepted},
		"cos dotted number":             {typedRole: true, overrides: []backendsv1alpha1.Override{o("assume_role.session_duration", `3600`)}, want: accepted},
		"cos dotted string at a number": {typedRole: true, overrides: []backendsv1alpha1.Override{o("assume_role.session_duration", `"3600"`)}, want: accepted},
		"cos dotted null":               {typedRole: true, overrides: []backendsv1alpha1.Override{o("assume_role.policy", `null`)}, want: accepted},
		"cos dotted list":               {typedRole: true, overrides: []backendsv1alpha1.Override{o("assume_role.policy", `["x"]`)}, want: refusedByTerraform},
		"cos dotted object":             {typedRole: true, overrides: []backendsv1alpha1.Override{o("assume_role.policy", `{"a": 1}`)}, want: refusedByTerraform},
		"cos dotted paths create the block": {overrides: []backendsv1alpha1.Override{
			o("assume_role.role_arn", `"r"`), o("assume_role.session_name", `"s"`)}, want: accepted},
		"cos dotted unknown attribute":    {typedRole: true, overrides: []backendsv1alpha1.Override{o("assume_role.future", `"x"`)}, want: refusedByTerraform},
		"cos dotted unknown block":        {overrides: []backendsv1alpha1.Override{o("future_block.inner", `"x"`)}, want: refusedByTerraform},
		"cos three names":                 {typedRole: true, overrides: []backendsv1alpha1.Override{o("assume_role.inner.x", `"x"`)}, want: refusedByTerraform},
		"cos dotted through an attribute": {overrides: []backendsv1alpha1.Override{o("bucket.x", `"x"`)}, want: refusedByRenderer},

		// The http backend has no blocks.
		"http number attribute":            {http: true, overrides: []backendsv1alpha1.Override{o("retry_max", `1`)}, want: accepted},
		"http string attribute":            {http: true, overrides: []backendsv1alpha1.Override{o("update_method", `"PUT"`)}, want: accepted},
		"http string at a number":          {http: true, overrides: []backendsv1alpha1.Override{o("retry_max", `"1"`)}, want: accepted},
		"http bool at a number":            {http: true, overrides: []backendsv1alpha1.Override{o("retry_max", `true`)}, want: refusedByTerraform},
		"http null attribute":              {http: true, overrides: []backendsv1alpha1.Override{o("update_method", `null`)}, want: accepted},
		"http list at a string":            {http: true, overrides: []backendsv1alpha1.Override{o("update_method", `["PUT"]`)}, want: refusedByTerraform},
		"http object at a string":          {http: true, overrides: []backendsv1alpha1.Override{o("update_method", `{"a": "PUT"}`)}, want: refusedByTerraform},
		"http object unknown":              {http: true, overrides: []backendsv1alpha1.Override{o("future", `{"a": "b"}`)}, want: refusedByTerraform},
		"http dotted unknown block":        {http: true, overrides: []backendsv1alpha1.Override{o("future.inner", `1`)}, want: refusedByTerraform},
		"http dotted through an attribute": {http: true, overrides: []backendsv1alpha1.Override{o("address.x", `1`)}, want: refusedByRenderer},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			var address string
			if tc.http {
				srv := httptest.NewServer(stateserver.New(stateserver.NewMemoryStore()))
				t.Cleanup(srv.Close)
				address = srv.URL + statePath
			}
			files, err := overrideFiles(tc.http, address, tc.typedRole, role, tc.overrides)
			if err != nil {
				if !errors.Is(err, ErrInvalidOverride) {
					t.Fatalf("rendering failed with %v, want an invalid override or files", err)
				}
				if tc.want != refusedByRenderer {
					t.Fatalf("rendering failed (%v), want %s", err, tc.want)
				}
				return
			}
			got := map[string]verdict{}
			outputs := map[string]string{}
			backendType := "cos"
			if tc.http {
				backendType = "http"
			}
			for _, runner := range runners {
				for layoutName, l := range layouts {
					run := runner.Name + "/" + layoutName
					got[run], outputs[run] = initVerdict(t, runner, l, files, backendType)
				}
			}
			for _, run := range slices.Sorted(maps.Keys(got)) {
				if got[run] != tc.want {
					t.Errorf("%s: %s, want %s; it said:\n%s", run, got[run], tc.want, outputs[run])
				}
			}
		})
	}
}

// overrideFiles renders a minimal HttpBackend at address, or a CosBackend
// with role when typedRole, with overrides.
func overrideFiles(http bool, address string, typedRole bool, role *backendsv1alpha1.AssumeRole, overrides []backendsv1alpha1.Override) (Files, error) {
	if http {
		return HTTPFiles(backendsv1alpha1.HttpBackendSpec{Address: address, RetryMax: ptr.To[int32](0), Overrides: overrides})
	}
	spec := backendsv1alpha1.CosBackendSpec{Bucket: testBucket, Overrides: overrides}
	if typedRole {
		spec.AssumeRole = role
	}
	return CosFiles(spec, testRegion)
}

// initVerdict runs runner's init on files in layout l and tells whether
// the runner accepted the configuration, with its output. An http backend
// (at a reference server) is accepted when init succeeds; a cos backend,
// which can only fail behind the refusing proxy, when terraform asked the
// proxy for a host. A refusal must fail init with an error before any
// request.
func initVerdict(t *testing.T, runner testtools.Runner, l layout, files Files, backendType string) (verdict, string) {
	t.Helper()
	creds := CosCredentials(CosSecrets{SecretID: []byte("AKIDexample"), SecretKey: []byte("example-key")})
	if backendType == "http" {
		creds = nil
	}
	w := newWorkdir(t, runner, l.files(files, backendType), creds)
	out, err := w.Run(t, append([]string{"init", "-input=false", "-no-color"}, l.initArgs...)...)
	requests := w.proxy.requests()
	switch {
	case backendType == "http" && err == nil:
		return accepted, out
	case backendType == "cos" && err == nil:
		t.Fatalf("terraform init succeeded through a refusing proxy:\n%s", out)
	case len(requests) > 0:
		if backendType == "http" {
			t.Fatalf("terraform init asked the proxy for %q, though the state server is on loopback:\n%s", requests, out)
		}
		for _, diag := range configErrors {
			if strings.Contains(out, diag) {
				t.Fatalf("terraform asked the proxy for %q and refused the configuration (%s):\n%s", requests, diag, out)
			}
		}
		return accepted, out
	case !strings.Contains(out, "Error: "):
		t.Fatalf("terraform init failed without an error diagnostic (%v):\n%s", err, out)
	}
	return refusedByTerraform, out
}
