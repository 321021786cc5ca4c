package render

import (
	"k8s.io/utils/ptr"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"

	backendsv1alpha1 "github.com/infrastate/backend-operator/api/v1alpha1"
)

// The specs rendered by the golden, round-trip and determinism tests. Each
// case name is also the directory of its golden files under
// testdata/http/ or testdata/cos/.

const (
	testAddress = "https://state.example.com/state/app"
	testLock    = "https://state.example.com/state/app/lock"
)

// escapingString has every character that could end a quoted string or
// start a template in HCL or JSON, plus non-ASCII text.
const escapingString = "q\"uote\\back\\\\slash\nnew\r\ttab ${x} %{ if true }y%{ endif } $${lit} %%{lit} end$ end% {} ü日本🙂 <&>"

func overrideJSON(path, value string) backendsv1alpha1.Override {
	return backendsv1alpha1.Override{Path: path, Value: apiextensionsv1.JSON{Raw: []byte(value)}}
}

func httpCases() map[string]backendsv1alpha1.HttpBackendSpec {
	return map[string]backendsv1alpha1.HttpBackendSpec{
		"minimal": {Address: testAddress},
		// The API server's defaults are Terraform's: nothing is rendered for them.
		"api_defaults": {
			Address: testAddress, UpdateMethod: "POST", LockMethod: "LOCK", UnlockMethod: "UNLOCK",
			RetryMax: ptr.To[int32](2), RetryWaitMin: ptr.To[int32](1), RetryWaitMax: ptr.To[int32](30),
		},
		"update_method": {Address: testAddress, UpdateMethod: "PUT"},
		"lock_address":  {Address: testAddress, LockAddress: testLock, LockMethod: "LOCK"},
		"lock_method":   {Address: testAddress, LockAddress: testLock, LockMethod: "POST"},
		// Methods without their address are meaningless and not rendered.
		"methods_without_addresses": {Address: testAddress, LockMethod: "POST", UnlockMethod: "DELETE"},
		"unlock_address":            {Address: testAddress, UnlockAddress: testLock, UnlockMethod: "UNLOCK"},
		"unlock_method":             {Address: testAddress, UnlockAddress: testLock, UnlockMethod: "DELETE"},
		"username":                  {Address: testAddress, Username: "terraform"},
		"skip_cert_verification":    {Address: testAddress, SkipCertVerification: true},
		"retry_max":                 {Address: testAddress, RetryMax: ptr.To[int32](0)},
		"retry_wait_min":            {Address: testAddress, RetryWaitMin: ptr.To[int32](0)},
		"retry_wait_max":            {Address: testAddress, RetryWaitMax: ptr.To[int32](120)},
		// Secret references never reach the files.
		"secret_references": {
			Address:           testAddress,
			Username:          "terraform",
			PasswordSecretRef: &backendsv1alpha1.SecretKeyRef{Name: "state-password", Key: "password"},
			TLS: &backendsv1alpha1.HttpBackendTLS{
				ClientCertificateSecretRef: &backendsv1alpha1.LocalSecretRef{Name: "client-tls"},
				CACertificate:              &backendsv1alpha1.CACertificateSource{SecretRef: &backendsv1alpha1.LocalSecretRef{Name: "ca"}, Key: "ca.crt"},
			},
		},
		"overrides": {
			Address:      testAddress,
			UpdateMethod: "PUT",
			Overrides: []backendsv1alpha1.Override{
				overrideJSON("future_string", `"value"`),
				overrideJSON("update_method", `"PATCH"`), // replaces the typed attribute in place
				overrideJSON("future_number", `1.5`),
				overrideJSON("future_bool", `false`),
				overrideJSON("future_null", `null`),
				// Values nest at most one level (MaxOverrideDepth).
				overrideJSON("future_list", `["a", 1, true, null]`),
				overrideJSON("future_object", `{"z": 1, "a": "nested", "a b": "quoted key", "true": "keyword key", "${k}": "template key"}`),
				overrideJSON("future_block.inner", `"created"`),
				overrideJSON("future_block.other", `2`),
			},
		},
		"escaping_username": {Address: testAddress, Username: escapingString},
		"escaping_address":  {Address: testAddress + "?q=\"${x}\"&r=%{y}\\\n"},
		"escaping_override": {Address: testAddress, Overrides: []backendsv1alpha1.Override{
			overrideJSON("future_string", `"q\"uote\\back\nnew ${x} %{ if } $${lit} \u00fc\ud83d\ude42 \u2028"`),
		}},
		"everything": {
			Address:              testAddress,
			UpdateMethod:         "PUT",
			LockAddress:          testLock,
			LockMethod:           "POST",
			UnlockAddress:        testLock,
			UnlockMethod:         "DELETE",
			Username:             "terraform",
			PasswordSecretRef:    &backendsv1alpha1.SecretKeyRef{Name: "state-password"},
			RetryMax:             ptr.To[int32](5),
			RetryWaitMin:         ptr.To[int32](2),
			RetryWaitMax:         ptr.To[int32](60),
			SkipCertVerification: true,
			Overrides:            []backendsv1alpha1.Override{overrideJSON("future_attribute", `"x"`)},
		},
	}
}

// testRegion is the region the cos cases are rendered in.
const testRegion = "ap-guangzhou"

const testBucket = "tfstate-1250000000"

func cosCases() map[string]backendsv1alpha1.CosBackendSpec {
	role := func(ar backendsv1alpha1.AssumeRole) *backendsv1alpha1.AssumeRole {
		if ar.RoleArn == "" {
			ar.RoleArn = "qcs::cam::uin/100000000001:roleName/tfstate"
		}
		if ar.SessionName == "" {
			ar.SessionName = "backend-operator"
		}
		return &ar
	}
	return map[string]backendsv1alpha1.CosBackendSpec{
		"minimal": {Bucket: testBucket},
		// The rendered region is the effective one passed to CosFiles, not
		// spec.region.
		"region_from_argument":         {Bucket: testBucket, Region: "ap-shanghai"},
		"prefix":                       {Bucket: testBucket, Prefix: "teams/app"},
		"key":                          {Bucket: testBucket, Key: "app.tfstate"},
		"key_default":                  {Bucket: testBucket, Key: "terraform.tfstate"},
		"encrypt_true":                 {Bucket: testBucket, Encrypt: new(true)},
		"encrypt_false":                {Bucket: testBucket, Encrypt: new(false)},
		"acl":                          {Bucket: testBucket, ACL: "public-read"},
		"acl_default":                  {Bucket: testBucket, ACL: "private"},
		"accelerate_true":              {Bucket: testBucket, Accelerate: new(true)},
		"accelerate_false":             {Bucket: testBucket, Accelerate: new(false)},
		"endpoint":                     {Bucket: testBucket, Endpoint: "https://cos-internal.ap-guangzhou.tencentcos.cn"},
		"domain":                       {Bucket: testBucket, Domain: "internal.tencentcloudapi.com"},
		"assume_role":                  {Bucket: testBucket, AssumeRole: role(backendsv1alpha1.AssumeRole{SessionDuration: ptr.To[int32](7200)})},
		"assume_role_session_duration": {Bucket: testBucket, AssumeRole: role(backendsv1alpha1.AssumeRole{SessionDuration: ptr.To[int32](3600)})},
		"assume_role_policy": {Bucket: testBucket, AssumeRole: role(backendsv1alpha1.AssumeRole{
			Policy: `{"version":"2.0","statement":[{"effect":"allow","action":["cos:*"],"resource":["qcs::cos:${region}:uid/1250000000:*"]}]}`,
		})},
		"assume_role_external_id": {Bucket: testBucket, AssumeRole: role(backendsv1alpha1.AssumeRole{ExternalID: "ext-123"})},
		"credentials_reference":   {Bucket: testBucket, CredentialsSecretRef: &backendsv1alpha1.LocalSecretRef{Name: "cos-credentials"}},
		"overrides": {
			Bucket:     testBucket,
			Prefix:     "old",
			AssumeRole: role(backendsv1alpha1.AssumeRole{Policy: "{}"}),
			Overrides: []backendsv1alpha1.Override{
				overrideJSON("prefix", `"new"`),                       // replaces the typed attribute in place
				overrideJSON("assume_role.policy", `"{\"a\":1}"`),     // replaces inside the typed block
				overrideJSON("assume_role.future_attribute", `["x"]`), // added to the typed block
				overrideJSON("future_attribute", `{"b": 2, "a": 1}`),  // added after the typed attributes
				overrideJSON("future_block.inner", `true`),            // a new block
			},
		},
		// An object for the assume_role block is written as the block in
		// every file.
		"overrides_block": {
			Bucket: testBucket,
			Overrides: []backendsv1alpha1.Override{
				overrideJSON("assume_role", `{"session_name": "runner", "role_arn": "qcs::cam::uin/1:roleName/r", "session_duration": 3600}`),
				overrideJSON("assume_role.policy", `"{}"`),
			},
		},
		"escaping": {Bucket: testBucket, Prefix: escapingString, Key: "a${b}%{c}.tfstate", AssumeRole: role(backendsv1alpha1.AssumeRole{Policy: escapingString})},
		"everything": {
			Bucket:               testBucket,
			Region:               testRegion,
			Prefix:               "teams/app",
			Key:                  "app.tfstate",
			Encrypt:              new(true),
			ACL:                  "public-read",
			Accelerate:           new(false),
			Endpoint:             "https://cos-internal.ap-guangzhou.tencentcos.cn",
			Domain:               "internal.tencentcloudapi.com",
			CredentialsSecretRef: &backendsv1alpha1.LocalSecretRef{Name: "cos-credentials"},
			AssumeRole: role(backendsv1alpha1.AssumeRole{
				SessionDuration: ptr.To[int32](900),
				Policy:          `{"version":"2.0"}`,
				ExternalID:      "ext-123",
			}),
			Overrides: []backendsv1alpha1.Override{overrideJSON("future_attribute", `"x"`)},
		},
	}
}
