package validation

import (
	"context"
	"fmt"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"github.com/onsi/gomega/types"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// mutation changes one part of a valid manifest.
type mutation func(obj map[string]any)

// set writes value at a dotted path, creating the maps on the way.
func set(path string, value any) mutation {
	return func(obj map[string]any) {
		Expect(unstructured.SetNestedField(obj, value, strings.Split(path, ".")...)).To(Succeed())
	}
}

// del removes the field at a dotted path.
func del(path string) mutation {
	return func(obj map[string]any) {
		unstructured.RemoveNestedField(obj, strings.Split(path, ".")...)
	}
}

// build returns a valid manifest of kind with spec, changed by mutations.
func build(kind string, spec map[string]any, mutations ...mutation) *unstructured.Unstructured {
	obj := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "backends.infrastate.io/v1alpha1",
		"kind":       kind,
		"metadata":   map[string]any{"name": "subject"},
		"spec":       spec,
	}}
	for _, m := range mutations {
		m(obj.Object)
	}
	return obj
}

// remoteState returns a valid RemoteState changed by mutations.
func remoteState(mutations ...mutation) *unstructured.Unstructured {
	return build("RemoteState", map[string]any{
		"backendRef": map[string]any{"kind": "HttpBackend", "name": "network"},
	}, mutations...)
}

// outputGrant returns a valid OutputGrant changed by mutations.
func outputGrant(mutations ...mutation) *unstructured.Unstructured {
	return build("OutputGrant", map[string]any{
		"to": []any{map[string]any{"namespace": "team-b"}},
	}, mutations...)
}

// stateHistory returns a valid StateHistory changed by mutations.
func stateHistory(mutations ...mutation) *unstructured.Unstructured {
	return build("StateHistory", map[string]any{
		"backendRef":  map[string]any{"kind": "HttpBackend", "name": "network"},
		"destination": map[string]any{"cosBackendRef": map[string]any{"name": "backups"}},
	}, mutations...)
}

// stateRestore returns a valid StateRestore changed by mutations.
func stateRestore(mutations ...mutation) *unstructured.Unstructured {
	return build("StateRestore", map[string]any{
		"historyRef": map[string]any{"name": "network"},
		"serial":     int64(3),
	}, mutations...)
}

// httpBackend returns a valid HttpBackend changed by mutations.
func httpBackend(mutations ...mutation) *unstructured.Unstructured {
	return build("HttpBackend", map[string]any{
		"address":       "https://state.example.com/state/app",
		"lockAddress":   "https://state.example.com/state/app",
		"unlockAddress": "https://state.example.com/state/app",
	}, mutations...)
}

// cosBackend returns a valid CosBackend changed by mutations.
func cosBackend(mutations ...mutation) *unstructured.Unstructured {
	return build("CosBackend", map[string]any{
		"bucket": "tfstate-1250000000",
		"region": "ap-guangzhou",
	}, mutations...)
}

func assumeRole(members map[string]any) mutation {
	return set("spec.assumeRole", members)
}

func overrides(paths ...string) mutation {
	items := make([]any, 0, len(paths))
	for _, p := range paths {
		items = append(items, map[string]any{"path": p, "value": "x"})
	}
	return set("spec.overrides", items)
}

// beInvalid matches an "is invalid" rejection whose message names the
// field and the rule.
func beInvalid(field, message string) types.GomegaMatcher {
	return SatisfyAll(
		WithTransform(apierrors.IsInvalid, BeTrue()),
		MatchError(ContainSubstring(field)),
		MatchError(ContainSubstring(message)),
	)
}

var _ = Describe("Admission validation", func() {
	DescribeTable("rejects a bad manifest",
		func(ctx context.Context, obj *unstructured.Unstructured, field, message string) {
			obj.SetNamespace(newNamespace(ctx))
			err := k8sClient.Create(ctx, obj)
			Expect(err).To(beInvalid(field, message))
		},

		// HttpBackend
		Entry("http: address is required", httpBackend(del("spec.address")),
			"spec.address", "Required value"),
		Entry("http: address must be http or https", httpBackend(set("spec.address", "ftp://state.example.com/app")),
			"spec.address", "address must be an absolute http:// or https:// URL with a host"),
		Entry("http: address must have a host", httpBackend(set("spec.address", "https://")),
			"spec.address", "address must be an absolute http:// or https:// URL with a host"),
		Entry("http: address length is bounded", httpBackend(set("spec.address", "https://e.com/"+strings.Repeat("a", 2048))),
			"spec.address", "Too long"),
		Entry("http: lockAddress must be http or https", httpBackend(set("spec.lockAddress", "state.example.com/lock")),
			"spec.lockAddress", "lockAddress must be an absolute http:// or https:// URL with a host"),
		Entry("http: unlockAddress must be http or https", httpBackend(set("spec.unlockAddress", "file:///tmp/lock")),
			"spec.unlockAddress", "unlockAddress must be an absolute http:// or https:// URL with a host"),
		Entry("http: updateMethod is an upper-case token", httpBackend(set("spec.updateMethod", "post")),
			"spec.updateMethod", "updateMethod must be an upper-case HTTP method token"),
		Entry("http: lockMethod is a method token", httpBackend(set("spec.lockMethod", "LO CK")),
			"spec.lockMethod", "lockMethod must be one of LOCK, UNLOCK, POST, PUT, DELETE or PATCH"),
		Entry("http: unlockMethod is upper-case", httpBackend(set("spec.unlockMethod", "unlock")),
			"spec.unlockMethod", "unlockMethod must be one of LOCK, UNLOCK, POST, PUT, DELETE or PATCH"),
		Entry("http: retryMax at most 20", httpBackend(set("spec.retryMax", int64(21))),
			"spec.retryMax", "should be less than or equal to 20"),
		Entry("http: retryMax not negative", httpBackend(set("spec.retryMax", int64(-1))),
			"spec.retryMax", "should be greater than or equal to 0"),
		Entry("http: retryWaitMin not negative", httpBackend(set("spec.retryWaitMin", int64(-1))),
			"spec.retryWaitMin", "should be greater than or equal to 0"),
		Entry("http: retryWaitMin <= retryWaitMax", httpBackend(set("spec.retryWaitMin", int64(40)), set("spec.retryWaitMax", int64(30))),
			"spec.retryWaitMin", "retryWaitMin must be less than or equal to retryWaitMax"),
		Entry("http: retryWaitMin <= the default retryWaitMax", httpBackend(set("spec.retryWaitMin", int64(31))),
			"spec.retryWaitMin", "retryWaitMin must be less than or equal to retryWaitMax"),
		Entry("http: username length is bounded", httpBackend(set("spec.username", strings.Repeat("u", 257))),
			"spec.username", "Too long"),
		Entry("http: a password needs a username", httpBackend(set("spec.passwordSecretRef", map[string]any{"name": "pw"})),
			"spec.passwordSecretRef", "passwordSecretRef needs username"),
		Entry("http: Secret names are DNS names", httpBackend(set("spec.username", "u"), set("spec.passwordSecretRef", map[string]any{"name": "Bad_Name"})),
			"spec.passwordSecretRef.name", "should match"),
		Entry("http: Secret keys are valid keys", httpBackend(set("spec.username", "u"), set("spec.passwordSecretRef", map[string]any{"name": "pw", "key": "a/b"})),
			"spec.passwordSecretRef.key", "should match"),
		Entry("http: CA from exactly one source, not two", httpBackend(set("spec.tls.caCertificate", map[string]any{
			"secretRef": map[string]any{"name": "ca"}, "configMapRef": map[string]any{"name": "ca"},
		})), "spec.tls.caCertificate", "caCertificate must set exactly one of secretRef or configMapRef"),
		Entry("http: CA from exactly one source, not none", httpBackend(set("spec.tls.caCertificate", map[string]any{"key": "ca.pem"})),
			"spec.tls.caCertificate", "caCertificate must set exactly one of secretRef or configMapRef"),
		Entry("http: client certificate Secret needs a name", httpBackend(set("spec.tls.clientCertificateSecretRef", map[string]any{})),
			"spec.tls.clientCertificateSecretRef.name", "Required value"),
		Entry("http: probe interval is a duration", httpBackend(set("spec.probe.interval", "five minutes")),
			"spec.probe.interval", "should match"),
		Entry("http: probe interval at least 10s", httpBackend(set("spec.probe.interval", "5s")),
			"spec.probe.interval", "probe.interval must be 0s (probing disabled) or between 10s and 24h"),
		Entry("http: probe interval at most 24h", httpBackend(set("spec.probe.interval", "25h")),
			"spec.probe.interval", "probe.interval must be 0s (probing disabled) or between 10s and 24h"),
		Entry("http: lockCheck needs a lock address", httpBackend(del("spec.lockAddress"), set("spec.probe.lockCheck", true)),
			"spec.probe.lockCheck", "probe.lockCheck needs lockAddress and unlockAddress"),
		Entry("http: a POST lock at the state's address is a write of the state", httpBackend(set("spec.lockMethod", "POST")),
			"spec.lockMethod", "lockAddress equals address and lockMethod equals updateMethod (POST when unset): the server would take every lock request for a write of the state"),
		Entry("http: a lock at the state's address with the update method", httpBackend(set("spec.updateMethod", "PUT"), set("spec.lockMethod", "PUT")),
			"spec.lockMethod", "lockAddress equals address and lockMethod equals updateMethod"),
		Entry("http: the default lock method at the state's address when it updates", httpBackend(set("spec.updateMethod", "LOCK")),
			"spec.lockMethod", "lockAddress equals address and lockMethod equals updateMethod"),
		Entry("http: a POST unlock at the state's address is a write of the state", httpBackend(set("spec.unlockMethod", "POST")),
			"spec.unlockMethod", "unlockAddress equals address and unlockMethod equals updateMethod (POST when unset): the server would take every unlock request for a write of the state"),
		Entry("http: forceUnlock needs an unlock address", httpBackend(del("spec.unlockAddress"), set("spec.forceUnlock.lockID", "abc")),
			"spec.forceUnlock", "forceUnlock needs lockAddress (to learn the holder) and unlockAddress"),
		Entry("http: forceUnlock needs a lockID", httpBackend(set("spec.forceUnlock", map[string]any{})),
			"spec.forceUnlock.lockID", "Required value"),
		Entry("http: configMapName is a DNS name", httpBackend(set("spec.configMapName", "Backend Config")),
			"spec.configMapName", "should match"),
		Entry("http: overrides cannot set the password", httpBackend(overrides("password")),
			"spec.overrides", "overrides cannot set password, client_certificate_pem, client_private_key_pem or client_ca_certificate_pem"),
		Entry("http: overrides cannot set the client key", httpBackend(overrides("update_method", "client_private_key_pem")),
			"spec.overrides", "overrides cannot set password, client_certificate_pem"),
		Entry("http: overrides cannot move the address the probe reads", httpBackend(overrides("address")),
			"spec.overrides", "overrides cannot set address: set spec.address instead, which the probe and RemoteState read too"),
		Entry("http: overrides cannot change the user the probe sends", httpBackend(overrides("update_method", "username")),
			"spec.overrides", "overrides cannot set username: set spec.username instead"),
		Entry("http: overrides cannot skip the certificate check", httpBackend(overrideValue("skip_cert_verification", true)),
			"spec.overrides", "overrides cannot set skip_cert_verification: set spec.skipCertVerification instead"),
		Entry("http: overrides cannot set the lock settings the lock check uses", httpBackend(overrides("lock_address", "unlock_method")),
			"spec.overrides", "overrides cannot set unlock_method: set spec.unlockMethod instead"),
		Entry("http: overrides cannot set the retries the probe makes", httpBackend(overrideValue("retry_wait_min", int64(5))),
			"spec.overrides", "overrides cannot set retry_wait_min: set spec.retryWaitMin instead"),
		Entry("http: override paths are snake_case", httpBackend(overrides("Lock-Method")),
			"spec.overrides[0].path", "should match"),
		Entry("http: override paths are unique", httpBackend(overrides("update_method", "update_method")),
			"spec.overrides[1]", "Duplicate value"),
		Entry("http: overrides are bounded", httpBackend(overrides(numbered("attr_", 33)...)),
			"spec.overrides", "Too many"),
		Entry("http: address carries no user information", httpBackend(set("spec.address", "https://runner:s3cret@state.example.com/state/app")),
			"spec.address", "address must not contain user information (user:password@host)"),
		Entry("http: address carries no user name either", httpBackend(set("spec.address", "https://glpat-token@state.example.com/state/app")),
			"spec.address", "set username and passwordSecretRef instead"),
		Entry("http: lockAddress carries no user information", httpBackend(set("spec.lockAddress", "https://u:p@state.example.com/lock")),
			"spec.lockAddress", "lockAddress must not contain user information"),
		Entry("http: unlockAddress carries no user information", httpBackend(set("spec.unlockAddress", "http://u:p@10.0.0.1/unlock")),
			"spec.unlockAddress", "unlockAddress must not contain user information"),
		Entry("http: address carries no credential in its query", httpBackend(set("spec.address", "https://state.example.com/state/app?env=prod&token=abc")),
			"spec.address", "address must not carry credentials in its query string"),
		Entry("http: query credential names match in any case", httpBackend(set("spec.unlockAddress", "https://state.example.com/x?X-Amz-Signature=abc")),
			"spec.unlockAddress", "unlockAddress must not carry credentials in its query string"),
		Entry("http: address is not the metadata service", httpBackend(set("spec.address", "http://169.254.169.254/latest/meta-data")),
			"spec.address", "address must not point at a link-local address or a cloud metadata service"),
		Entry("http: lockAddress is not link-local IPv6", httpBackend(set("spec.lockAddress", "http://[fe80::1]:8080/lock")),
			"spec.lockAddress", "lockAddress must not point at a link-local address"),
		Entry("http: address is not an IPv4-mapped link-local address", httpBackend(set("spec.address", "http://[::ffff:169.254.169.254]/x")),
			"spec.address", "address must not point at a link-local address"),
		Entry("http: address is not a metadata host name", httpBackend(set("spec.address", "http://Metadata.Google.Internal./computeMetadata/v1")),
			"spec.address", "address must not point at a link-local address or a cloud metadata service"),
		Entry("http: address is not Alibaba Cloud's metadata service", httpBackend(set("spec.address", "http://100.100.100.200/latest")),
			"spec.address", "address must not point at a link-local address or a cloud metadata service"),
		Entry("http: address is not the unspecified IPv4 address", httpBackend(set("spec.address", "http://0.0.0.0:8080/state")),
			"spec.address", "address must not be an unspecified address (0.0.0.0, [::], [::ffff:0.0.0.0])"),
		Entry("http: address is not the unspecified IPv6 address", httpBackend(set("spec.address", "https://[::]/state")),
			"spec.address", "address must not be an unspecified address"),
		Entry("http: address is not :: written out", httpBackend(set("spec.address", "http://[0:0:0:0:0:0:0:0]:80")),
			"spec.address", "address must not be an unspecified address"),
		Entry("http: address is not :: with a zone", httpBackend(set("spec.address", "http://[::%25eth0]/")),
			"spec.address", "address must not be an unspecified address"),
		Entry("http: address is not :: as an IPv4-compatible address", httpBackend(set("spec.address", "http://[::0.0.0.0]?x=1")),
			"spec.address", "address must not be an unspecified address"),
		Entry("http: lockAddress is not an IPv4-mapped 0.0.0.0", httpBackend(set("spec.lockAddress", "http://[::ffff:0.0.0.0]/lock")),
			"spec.lockAddress", "lockAddress must not be an unspecified address"),
		Entry("http: lockAddress is not an IPv4-mapped 0.0.0.0 in hex", httpBackend(set("spec.lockAddress", "http://[0::FFFF:0000:0]#x")),
			"spec.lockAddress", "lockAddress must not be an unspecified address"),
		Entry("http: unlockAddress is not 0.0.0.0", httpBackend(set("spec.unlockAddress", "https://0.0.0.0/unlock")),
			"spec.unlockAddress", "unlockAddress must not be an unspecified address"),
		Entry("http: unlockAddress is not ::", httpBackend(set("spec.unlockAddress", "https://[::]:8443")),
			"spec.unlockAddress", "unlockAddress must not be an unspecified address"),
		Entry("http: lockMethod is a method state servers use", httpBackend(set("spec.lockMethod", "GET")),
			"spec.lockMethod", "lockMethod must be one of LOCK, UNLOCK, POST, PUT, DELETE or PATCH"),
		Entry("http: unlockMethod is a method state servers use", httpBackend(set("spec.unlockMethod", "PROPFIND")),
			"spec.unlockMethod", "unlockMethod must be one of LOCK, UNLOCK, POST, PUT, DELETE or PATCH"),
		Entry("http: configMapName is not kube-root-ca.crt", httpBackend(set("spec.configMapName", "kube-root-ca.crt")),
			"spec.configMapName", "configMapName must not be a name that Kubernetes or a cluster add-on publishes in every namespace"),
		Entry("http: override values nest one level at most", httpBackend(overrideValue("update_method", []any{[]any{"x"}})),
			"spec.overrides", "the value of update_method must be a string of at most 4096 bytes"),
		Entry("http: 9000 nested arrays are refused", httpBackend(overrideValue("update_method", nestedArrays(9000))),
			"spec.overrides", "the value of update_method must be"),
		Entry("http: override strings are bounded", httpBackend(overrideValue("update_method", strings.Repeat("a", 4097))),
			"spec.overrides", "the value of update_method must be"),
		Entry("http: override lists are bounded", httpBackend(overrideValue("zones", make([]any, 65))),
			"spec.overrides", "the value of zones must be"),
		Entry("http: override objects hold only scalars", httpBackend(overrideValue("block", map[string]any{"a": map[string]any{"b": "c"}})),
			"spec.overrides", "the value of block must be"),
		Entry("http: override object keys are bounded", httpBackend(overrideValue("block", map[string]any{strings.Repeat("k", 129): "v"})),
			"spec.overrides", "the value of block must be"),
		Entry("http: overrides total at most 32 KiB", httpBackend(set("spec.overrides", largeOverrides(9, 4000))),
			"spec.overrides", "the values total 36000 bytes, at most 32768 are allowed"),
		Entry("http: override strings are bounded in bytes", httpBackend(overrideValue("update_method", strings.Repeat("é", 2049))),
			"spec.overrides", "the value of update_method must be a string of at most 4096 bytes"),
		Entry("http: override numbers are bounded in magnitude", httpBackend(overrideValue("future_number", 1e32)),
			"spec.overrides", "the value of future_number must be"),
		Entry("http: override numbers in lists are bounded too", httpBackend(overrideValue("zones", []any{1.0, -1e-33})),
			"spec.overrides", "the value of zones must be"),
		Entry("http: override paths are three names deep at most", httpBackend(overrides("a.b.c.d")),
			"spec.overrides[0].path", "should match"),
		Entry("http: the name leaves room for the credentials Secret", httpBackend(func(o map[string]any) {
			o["metadata"] = map[string]any{"name": strings.Repeat("a", 234)}
		}), "metadata.name must be at most 233 characters", "valid Secret name"),

		// CosBackend
		Entry("cos: bucket is required", cosBackend(del("spec.bucket")),
			"spec.bucket", "Required value"),
		Entry("cos: bucket has an appid", cosBackend(set("spec.bucket", "tfstate")),
			"spec.bucket", "bucket must be <name>-<appid>"),
		Entry("cos: bucket is lower-case", cosBackend(set("spec.bucket", "TFState-1250000000")),
			"spec.bucket", "bucket must be <name>-<appid>"),
		Entry("cos: bucket length is bounded", cosBackend(set("spec.bucket", strings.Repeat("b", 60)+"-1250000000")),
			"spec.bucket", "Too long"),
		Entry("cos: region is a region name", cosBackend(set("spec.region", "Guangzhou")),
			"spec.region", "region must be a COS region such as ap-guangzhou"),
		Entry("cos: acl is private or public-read", cosBackend(set("spec.acl", "public-read-write")),
			"spec.acl", "Unsupported value"),
		Entry("cos: endpoint is a private COS endpoint", cosBackend(set("spec.endpoint", "https://cos.ap-guangzhou.myqcloud.com")),
			"spec.endpoint", "endpoint must look like https://cos-internal.<region>.tencentcos.cn"),
		Entry("cos: endpoint and accelerate exclude each other", cosBackend(set("spec.accelerate", true), set("spec.endpoint", "https://cos-internal.ap-guangzhou.tencentcos.cn")),
			"spec.endpoint", "accelerate and endpoint cannot be used together"),
		Entry("cos: domain is a domain name", cosBackend(set("spec.domain", "https://tencentcloudapi.com")),
			"spec.domain", "domain must be a DNS domain name"),
		Entry("cos: prefix is not absolute", cosBackend(set("spec.prefix", "/platform")),
			"spec.prefix", "prefix must not start with '/' or './'"),
		Entry("cos: prefix is not dot-relative", cosBackend(set("spec.prefix", "./platform")),
			"spec.prefix", "prefix must not start with '/' or './'"),
		Entry("cos: key does not start with a slash", cosBackend(set("spec.key", "/terraform.tfstate")),
			"spec.key", "key must not start or end with '/'"),
		Entry("cos: key does not end with a slash", cosBackend(set("spec.key", "states/")),
			"spec.key", "key must not start or end with '/'"),
		Entry("cos: prefix length is bounded", cosBackend(set("spec.prefix", strings.Repeat("p", 513))),
			"spec.prefix", "Too long"),
		Entry("cos: assumeRole needs roleArn", cosBackend(assumeRole(map[string]any{"sessionName": "operator"})),
			"spec.assumeRole.roleArn", "Required value"),
		Entry("cos: assumeRole needs sessionName", cosBackend(assumeRole(map[string]any{"roleArn": "qcs::cam::uin/1:roleName/r"})),
			"spec.assumeRole.sessionName", "Required value"),
		Entry("cos: assumeRole sessionName characters", cosBackend(assumeRole(map[string]any{"roleArn": "qcs::cam::uin/1:roleName/r", "sessionName": "my session"})),
			"spec.assumeRole.sessionName", "sessionName may contain only letters, digits"),
		Entry("cos: assumeRole sessionDuration at most 43200", cosBackend(assumeRole(map[string]any{"roleArn": "r", "sessionName": "op", "sessionDuration": int64(43201)})),
			"spec.assumeRole.sessionDuration", "should be less than or equal to 43200"),
		Entry("cos: assumeRole sessionDuration not negative", cosBackend(assumeRole(map[string]any{"roleArn": "r", "sessionName": "op", "sessionDuration": int64(-1)})),
			"spec.assumeRole.sessionDuration", "should be greater than or equal to 0"),
		Entry("cos: assumeRole policy length is bounded", cosBackend(assumeRole(map[string]any{"roleArn": "r", "sessionName": "op", "policy": strings.Repeat("p", 2049)})),
			"spec.assumeRole.policy", "Too long"),
		Entry("cos: credentials Secret needs a name", cosBackend(set("spec.credentialsSecretRef", map[string]any{})),
			"spec.credentialsSecretRef.name", "Required value"),
		Entry("cos: overrides cannot set the secret key", cosBackend(overrides("secret_key")),
			"spec.overrides", "overrides cannot set secret_id, secret_key or security_token"),
		Entry("cos: overrides cannot set the security token", cosBackend(overrides("security_token")),
			"spec.overrides", "overrides cannot set secret_id, secret_key or security_token"),
		Entry("cos: overrides cannot move the bucket the probe reads", cosBackend(overrides("bucket")),
			"spec.overrides", "overrides cannot set bucket: set spec.bucket instead, which the probe and RemoteState read too"),
		Entry("cos: overrides cannot move the state the probe reads", cosBackend(overrides("region", "prefix", "key")),
			"spec.overrides", "overrides cannot set key: set spec.key instead"),
		Entry("cos: overrides cannot change the host the probe reads", cosBackend(overrides("endpoint")),
			"spec.overrides", "overrides cannot set endpoint: set spec.endpoint instead"),
		Entry("cos: overrides cannot turn on acceleration behind the probe's back", cosBackend(overrideValue("accelerate", true)),
			"spec.overrides", "overrides cannot set accelerate: set spec.accelerate instead"),
		Entry("cos: prefix has no '..' segment", cosBackend(set("spec.prefix", "platform/../other-team")),
			"spec.prefix", "prefix must not contain '..' path segments"),
		Entry("cos: key has no '..' segment", cosBackend(set("spec.key", "../../other-team/terraform.tfstate")),
			"spec.key", "key must not contain '..' path segments"),
		Entry("cos: an http endpoint must be allowed explicitly", cosBackend(set("spec.endpoint", "http://cos-internal.ap-guangzhou.tencentcos.cn")),
			"spec.endpoint", "endpoint uses http://, which sends the security token and the state in clear text"),
		Entry("cos: configMapName is not a mesh CA bundle", cosBackend(set("spec.configMapName", "istio-ca-root-cert")),
			"spec.configMapName", "configMapName must not be a name that Kubernetes or a cluster add-on publishes in every namespace"),
		Entry("cos: override values are bounded too", cosBackend(overrideValue("assume_role", map[string]any{"policy": map[string]any{"Statement": []any{}}})),
			"spec.overrides", "the value of assume_role must be"),
		Entry("cos: an assume_role override is an object", cosBackend(overrideValue("assume_role", "qcs::cam::uin/1:roleName/r")),
			"spec.overrides", "the value of assume_role must be an object of the block's attributes"),
		Entry("cos: an assume_role override is not a list", cosBackend(overrideValue("assume_role", []any{})),
			"spec.overrides", "the value of assume_role must be an object of the block's attributes"),
		// No override value is null at admission: the API server drops a
		// null required field.
		Entry("cos: an assume_role override is not null", cosBackend(overrideValue("assume_role", nil)),
			"spec.overrides[0].value", "Required value"),
		Entry("cos: assume_role override keys are attribute names", cosBackend(overrideValue("assume_role", map[string]any{"role arn": "r"})),
			"spec.overrides", "the value of assume_role must be an object of the block's attributes"),
		Entry("cos: assume_role override keys are no credentials", cosBackend(overrideValue("assume_role", map[string]any{"secret_key": "k"})),
			"spec.overrides", "the value of assume_role must be an object of the block's attributes"),
		// RemoteState
		Entry("remote: backendRef is required", remoteState(del("spec.backendRef")),
			"spec.backendRef", "Required value"),
		Entry("remote: backendRef kind is a backend kind", remoteState(set("spec.backendRef.kind", "S3Backend")),
			"spec.backendRef.kind", "Unsupported value"),
		Entry("remote: an HttpBackend has only the default workspace", remoteState(set("spec.workspace", "staging")),
			"spec.workspace", "workspace must be default for an HttpBackend"),
		Entry("remote: workspace characters", remoteState(set("spec.backendRef.kind", "CosBackend"), set("spec.workspace", "a/b")),
			"spec.workspace", "workspace may contain only letters, digits"),
		Entry("remote: output types are Terraform's", remoteState(set("spec.outputs", []any{map[string]any{"name": "a", "type": "tuple"}})),
			"spec.outputs[0].type", "Unsupported value"),
		Entry("remote: output keys are distinct", remoteState(set("spec.outputs", []any{
			map[string]any{"name": "a", "key": "X"}, map[string]any{"name": "b", "key": "X"},
		})), "spec.outputs", "outputs must publish distinct keys"),
		Entry("remote: a rename cannot take another output's name", remoteState(set("spec.outputs", []any{
			map[string]any{"name": "a"}, map[string]any{"name": "b", "key": "a"},
		})), "spec.outputs", "outputs must publish distinct keys"),
		Entry("remote: interval at least 10s", remoteState(set("spec.interval", "1s")),
			"spec.interval", "interval must be between 10s and 24h"),
		Entry("remote: the deprecated interval cannot disable reads", remoteState(set("spec.interval", "0s")),
			"spec.interval", "interval must be between 10s and 24h"),
		Entry("remote: probe interval at least 10s", remoteState(set("spec.probe.interval", "5s")),
			"spec.probe.interval", "probe.interval must be 0s (probing disabled) or between 10s and 24h"),
		Entry("remote: probe interval at most 24h", remoteState(set("spec.probe.interval", "25h")),
			"spec.probe.interval", "probe.interval must be 0s (probing disabled) or between 10s and 24h"),
		Entry("remote: probe interval is a duration", remoteState(set("spec.probe.interval", "5 minutes")),
			"spec.probe.interval", "should match"),
		Entry("remote: target names are DNS names", remoteState(set("spec.target.secretName", "Net_Secrets")),
			"spec.target.secretName", "should match"),
		Entry("remote: workspace is not '..'", remoteState(set("spec.backendRef.kind", "CosBackend"), set("spec.workspace", "..")),
			"spec.workspace", "workspace must not be '.' or '..'"),
		Entry("remote: output keys are not '..'", remoteState(set("spec.outputs", []any{map[string]any{"name": "a", "key": ".."}})),
			"spec.outputs[0].key", "key must not be '.' or '..'"),
		Entry("remote: target ConfigMap is not kube-root-ca.crt", remoteState(set("spec.target.configMapName", "kube-root-ca.crt")),
			"spec.target.configMapName", "configMapName must not be a name that Kubernetes or a cluster add-on publishes in every namespace"),
		Entry("remote: target Secret is not a Helm release", remoteState(set("spec.target.secretName", "sh.helm.release.v1.app.v1")),
			"spec.target.secretName", "secretName must not be a Helm release Secret name"),
		Entry("remote: defaults keys are ConfigMap keys", remoteState(set("spec.defaults", map[string]any{"a/b": "x"})),
			"spec.defaults", "a/b must be valid ConfigMap keys"),
		Entry("remote: defaults keys are not '..'", remoteState(set("spec.defaults", map[string]any{"..": "x"})),
			"spec.defaults", ".. must be valid ConfigMap keys"),
		Entry("remote: defaults nest two levels at most", remoteState(set("spec.defaults", map[string]any{"deep": []any{[]any{[]any{"x"}}}})),
			"spec.defaults", "the value of deep must nest at most two levels"),
		Entry("remote: defaults total at most 128 KiB", remoteState(set("spec.defaults", largeDefaults(2, 65535))),
			"spec.defaults", "the values total 131074 bytes, at most 131072 are allowed"),
		Entry("remote: the name leaves room for <name>-outputs", remoteState(set("metadata.name", strings.Repeat("a", 246))),
			"metadata.name must be at most 245 characters", "unless spec.target names both"),
		Entry("remote: one target name is not enough for a long name", remoteState(set("metadata.name", strings.Repeat("a", 246)),
			set("spec.target.configMapName", "outputs")),
			"metadata.name must be at most 245 characters", "unless spec.target names both"),

		Entry("cos: probe interval at least 10s", cosBackend(set("spec.probe.interval", "1s")),
			"spec.probe.interval", "probe.interval must be 0s (probing disabled) or between 10s and 24h"),

		Entry("remote: backendRef.namespace is a namespace name", remoteState(set("spec.backendRef.namespace", "Team_A")),
			"spec.backendRef.namespace", "should match"),
		Entry("grant: to names at least one consumer", outputGrant(set("spec.to", []any{})),
			"spec.to", "should have at least 1 items"),
		Entry("grant: a consumer by namespace and by selector at once", outputGrant(set("spec.to", []any{
			map[string]any{"namespace": "team-b", "namespaceSelector": map[string]any{}}})),
			"spec.to[0]", "set exactly one of namespace and namespaceSelector"),
		Entry("grant: a consumer by neither", outputGrant(set("spec.to", []any{map[string]any{}})),
			"spec.to[0]", "set exactly one of namespace and namespaceSelector"),
		Entry("grant: a sensitive output is named as outputs are", outputGrant(set("spec.sensitiveOutputs", []any{"db password"})),
			"spec.sensitiveOutputs[0]", "should match"),
		Entry("grant: a backend kind is a backend kind", outputGrant(set("spec.backends", []any{map[string]any{"kind": "Secret", "name": "x"}})),
			"spec.backends[0].kind", "Unsupported value"),

		Entry("history: a destination is required", stateHistory(del("spec.destination")),
			"spec.destination", "Required value"),
		Entry("history: the interval is at least 10s", stateHistory(set("spec.interval", "5s")),
			"spec.interval", "interval must be between 10s and 24h"),
		Entry("history: the interval is at most 24h", stateHistory(set("spec.interval", "25h")),
			"spec.interval", "interval must be between 10s and 24h"),
		Entry("history: a prefix cannot climb out with ..", stateHistory(set("spec.destination.prefix", "backups/../other")),
			"spec.destination.prefix", "should match"),
		Entry("history: a prefix does not start with /", stateHistory(set("spec.destination.prefix", "/backups")),
			"spec.destination.prefix", "should match"),
		Entry("history: retain.count is at least 1", stateHistory(set("spec.retain.count", int64(0))),
			"spec.retain.count", "should be greater than or equal to 1"),
		Entry("history: retain.count is at most 1000", stateHistory(set("spec.retain.count", int64(1001))),
			"spec.retain.count", "should be less than or equal to 1000"),
		Entry("history: retain.maxAge is at least 1m", stateHistory(set("spec.retain.maxAge", "30s")),
			"spec.retain.maxAge", "maxAge must be at least 1m"),
		Entry("history: an HttpBackend has only the default workspace", stateHistory(set("spec.workspace", "prod")),
			"spec.workspace", "workspace must be default for an HttpBackend"),
		Entry("history: the source is a backend kind", stateHistory(set("spec.backendRef.kind", "Secret")),
			"spec.backendRef.kind", "Unsupported value"),
		Entry("restore: a serial is not negative", stateRestore(set("spec.serial", int64(-1))),
			"spec.serial", "should be greater than or equal to 0"),
		Entry("restore: a history is required", stateRestore(del("spec.historyRef")),
			"spec.historyRef", "Required value"),
	)

	It("keeps a StateRestore's spec as it was created", func(ctx context.Context) {
		ns := newNamespace(ctx)
		obj := stateRestore()
		obj.SetName("once")
		obj.SetNamespace(ns)
		Expect(k8sClient.Create(ctx, obj)).To(Succeed())
		Expect(unstructured.SetNestedField(obj.Object, int64(4), "spec", "serial")).To(Succeed())
		Expect(k8sClient.Update(ctx, obj)).To(beInvalid("spec", "a StateRestore cannot change: create another"))
	}, SpecTimeout(time.Minute))

	It("refuses every override of a setting the probe reads, naming the typed field", func(ctx context.Context) {
		ns := newNamespace(ctx)
		probed := []struct {
			obj         func(...mutation) *unstructured.Unstructured
			path, field string
		}{
			{httpBackend, "address", "address"}, {httpBackend, "lock_address", "lockAddress"},
			{httpBackend, "lock_method", "lockMethod"}, {httpBackend, "unlock_address", "unlockAddress"},
			{httpBackend, "unlock_method", "unlockMethod"}, {httpBackend, "username", "username"},
			{httpBackend, "skip_cert_verification", "skipCertVerification"}, {httpBackend, "retry_max", "retryMax"},
			{httpBackend, "retry_wait_min", "retryWaitMin"}, {httpBackend, "retry_wait_max", "retryWaitMax"},
			{cosBackend, "bucket", "bucket"}, {cosBackend, "region", "region"}, {cosBackend, "prefix", "prefix"},
			{cosBackend, "key", "key"}, {cosBackend, "accelerate", "accelerate"}, {cosBackend, "endpoint", "endpoint"},
		}
		for _, p := range probed {
			obj := p.obj(overrides("future", p.path))
			obj.SetNamespace(ns)
			Expect(k8sClient.Create(ctx, obj)).To(beInvalid("spec.overrides",
				"overrides cannot set "+p.path+": set spec."+p.field+" instead, which the probe and RemoteState read too"),
				"an override of %s of a %s", p.path, obj.GetKind())
		}
	}, SpecTimeout(time.Minute))

	It("accepts every rule's valid edge", func(ctx context.Context) {
		ns := newNamespace(ctx)
		valid := []*unstructured.Unstructured{
			httpBackend(set("spec.address", "http://10.0.0.1:8080/state?env=prod&ID=1&author=me"), set("spec.retryMax", int64(20)),
				set("spec.retryWaitMin", int64(30)), set("spec.updateMethod", "PUT"), set("spec.probe.interval", "24h"),
				set("spec.probe.lockCheck", true), set("spec.forceUnlock.lockID", "3f0a3c51"),
				set("spec.lockMethod", "POST"), set("spec.unlockMethod", "DELETE"), set("spec.configMapName", "kube-root-ca.crt-backend"),
				set("spec.lockAddress", "http://metadata.example.com/lock"), set("spec.unlockAddress", "https://[::1]:8443/unlock"),
				set("spec.overrides", []any{
					map[string]any{"path": "future_flag", "value": true},
					map[string]any{"path": "update_method", "value": strings.Repeat("m", 4096)},
					map[string]any{"path": "zones", "value": stringList(64)},
					map[string]any{"path": "block", "value": map[string]any{strings.Repeat("k", 128): int64(1), "b": nil, "c": 1.5, "d": -9.9e31, "e": 1e-32, "f": 0.0}},
					map[string]any{"path": "a.b.c", "value": strings.Repeat("é", 2048)},
				})),
			cosBackend(set("spec.prefix", "platform/network..v2"), set("spec.key", "dir/terraform.tfstate"), set("spec.acl", "public-read"),
				set("spec.endpoint", "http://cos-internal.ap-guangzhou.tencentcos.cn"), set("spec.allowInsecureEndpoint", true), set("spec.domain", "tencentcloudapi.com"),
				assumeRole(map[string]any{"roleArn": "qcs::cam::uin/1:roleName/r", "sessionName": "op@team.io", "sessionDuration": int64(0)}),
				set("spec.overrides", []any{
					map[string]any{"path": "assume_role.policy", "value": "{}"},
					// The probe reads none of these.
					map[string]any{"path": "domain", "value": "internal.tencentcloudapi.com"},
					map[string]any{"path": "acl", "value": "private"},
					map[string]any{"path": "encrypt", "value": true},
					map[string]any{"path": "assume_role", "value": map[string]any{"session_duration": int64(900), "external_id": "e"}},
				})),
			// Neighbours of the unspecified addresses: a name that starts
			// like 0.0.0.0, ffff:: and ::ffff:0:0:0 (not IPv4-mapped), and
			// an IPv4-mapped address that is not 0.0.0.0.
			httpBackend(set("spec.address", "http://0.0.0.0.example.com:8080/state"), set("spec.lockAddress", "http://[ffff::]:8080/lock"),
				set("spec.unlockAddress", "http://[::ffff:0:0:0]/unlock")),
			httpBackend(set("spec.address", "http://[::ffff:10.0.0.1]/state"), set("spec.lockAddress", "http://0.0.0.1/lock"),
				set("spec.unlockAddress", "http://[::ffff:1:0]/unlock")),
			// Lock and unlock at the state's address with methods other
			// than the update method, and POST at another address.
			httpBackend(set("spec.updateMethod", "PUT"), set("spec.lockMethod", "POST"), set("spec.unlockMethod", "DELETE")),
			httpBackend(set("spec.lockMethod", "POST"), set("spec.lockAddress", "https://state.example.com/state/app/lock")),
			// An object at assume_role is refused only where it is the
			// cos backend's block.
			httpBackend(overrideValue("assume_role", "x")),
			remoteState(set("spec.backendRef.kind", "CosBackend"), set("spec.workspace", "staging"),
				set("spec.defaults", map[string]any{"region": "ap-guangzhou", "zones": stringList(64),
					"subnets": map[string]any{"a": map[string]any{"id": "subnet-1", "cidr": "10.0.0.0/24"}, "b": []any{"x", int64(1)}}}),
				set("spec.outputs", []any{map[string]any{"name": "vpc_id", "type": "string", "key": "VPC_ID"}, map[string]any{"name": "VPC_ID", "key": "vpc_id"}})),
			remoteState(set("spec.defaults", largeDefaults(2, 65534))), // 131072 bytes with the names
			remoteState(set("spec.backendRef.namespace", "team-a")),
			stateHistory(set("spec.backendRef.kind", "CosBackend"), set("spec.workspace", "staging.eu"), set("spec.interval", "10s"),
				set("spec.destination.prefix", "state-history/team-a/network.v2"), set("spec.retain", map[string]any{"count": int64(1000), "maxAge": "1m"})),
			stateHistory(set("spec.interval", "24h"), set("spec.retain", map[string]any{"count": int64(1)})),
			stateRestore(set("spec.serial", int64(0)), set("spec.lineage", "0b6e4c2a-5f7d-4c3e-9a1b-2d8f6e4c2a10"), set("spec.allowLineageChange", true)),
			outputGrant(set("spec.backends", []any{map[string]any{"kind": "CosBackend", "name": "network.v2"}}), set("spec.workspaces", []any{"prod", "staging.eu"}),
				set("spec.to", []any{map[string]any{"namespace": "team-b"}, map[string]any{"namespaceSelector": map[string]any{}},
					map[string]any{"namespaceSelector": map[string]any{"matchLabels": map[string]any{"infrastate.io/network-outputs": "granted"}}}}),
				set("spec.outputs", []any{"vpc_id", "subnet-ids"}), set("spec.sensitiveOutputs", []any{"_db_password"})),
			// probe.interval: 0s reads only on changes; the edges of the
			// bounds; the deprecated interval alone, or beside a probe
			// that sets no interval.
			remoteState(set("spec.probe.interval", "0s")),
			remoteState(set("spec.probe.interval", "10s")),
			remoteState(set("spec.probe.interval", "24h")),
			remoteState(set("spec.interval", "10m")),
			remoteState(set("spec.interval", "10m"), set("spec.probe", map[string]any{})),
			// As many scalars as 128 KiB of defaults holds: the policy's CEL
			// cost is highest per byte here, and must stay within budget.
			remoteState(set("spec.defaults", scalarDefaults([]int{64, 64, 64, 60}))),
		}
		for i, obj := range valid {
			obj.SetName(fmt.Sprintf("valid-%d", i))
			obj.SetNamespace(ns)
			Expect(k8sClient.Create(ctx, obj)).To(Succeed(), "creating %s", obj.GetKind())
		}
		long := []*unstructured.Unstructured{
			remoteState(set("metadata.name", strings.Repeat("a", 245))),
			remoteState(set("metadata.name", strings.Repeat("b", 253)), set("spec.target.configMapName", "outputs"), set("spec.target.secretName", "outputs")),
		}
		for _, obj := range long {
			obj.SetNamespace(ns)
			Expect(k8sClient.Create(ctx, obj)).To(Succeed(), "creating %s %s", obj.GetKind(), obj.GetName())
		}
	}, SpecTimeout(time.Minute))
})

// numbered returns n distinct names with a prefix.
func numbered(prefix string, n int) []string {
	names := make([]string, n)
	for i := range names {
		names[i] = fmt.Sprintf("%s%d", prefix, i)
	}
	return names
}

// overrideValue sets one override with the given JSON value.
func overrideValue(path string, value any) mutation {
	return set("spec.overrides", []any{map[string]any{"path": path, "value": value}})
}

// nestedArrays returns depth arrays nested in one another: [[[...]]].
func nestedArrays(depth int) any {
	var v any = []any{}
	for range depth - 1 {
		v = []any{v}
	}
	return v
}

// stringList returns n short strings.
func stringList(n int) []any {
	list := make([]any, n)
	for i := range list {
		list[i] = fmt.Sprintf("item-%d", i)
	}
	return list
}

// largeOverrides returns n overrides whose values are strings of size
// characters.
func largeOverrides(n, size int) []any {
	items := make([]any, n)
	for i := range items {
		items[i] = map[string]any{"path": fmt.Sprintf("attr_%d", i), "value": strings.Repeat("v", size)}
	}
	return items
}

// scalarDefaults returns one default per entry of lists, an object of that
// many lists of 64 bools each.
func scalarDefaults(lists []int) map[string]any {
	defaults := make(map[string]any, len(lists))
	for i, n := range lists {
		value := make(map[string]any, n)
		for j := range n {
			bools := make([]any, 64)
			for k := range bools {
				bools[k] = k%2 == 0
			}
			value[fmt.Sprintf("l%d", j)] = bools
		}
		defaults[fmt.Sprintf("d%d", i)] = value
	}
	return defaults
}

// largeDefaults returns n defaults whose values are strings of size
// characters.
func largeDefaults(n, size int) map[string]any {
	defaults := make(map[string]any, n)
	for i := range n {
		defaults[fmt.Sprintf("d%d", i)] = strings.Repeat("v", size)
	}
	return defaults
}
