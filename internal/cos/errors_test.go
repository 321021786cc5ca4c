package cos_test

import (
	"net/http"
	"testing"

	"github.com/infrastate/backend-operator/internal/cos"
)

func TestResponseErrorIs(t *testing.T) {
	cases := map[string]struct {
		status int
		code   string
		key    string
		want   []error
	}{
		"NoSuchBucket":      {status: http.StatusNotFound, code: "NoSuchBucket", key: "k", want: []error{cos.ErrBucketNotFound}},
		"404 to the bucket": {status: http.StatusNotFound, want: []error{cos.ErrBucketNotFound}},
		"404 to an object":  {status: http.StatusNotFound, code: "NoSuchKey", key: "k"},
		"AccessDenied":      {status: http.StatusForbidden, code: "AccessDenied", want: []error{cos.ErrAccessDenied}},
		"InvalidAccessKeyId": {
			status: http.StatusForbidden, code: "InvalidAccessKeyId", want: []error{cos.ErrAccessDenied},
		},
		"SignatureDoesNotMatch": {
			status: http.StatusForbidden, code: "SignatureDoesNotMatch", want: []error{cos.ErrAccessDenied},
		},
		"any other 403":        {status: http.StatusForbidden, code: "RequestTimeTooSkewed", want: []error{cos.ErrAccessDenied}},
		"a 403 without a code": {status: http.StatusForbidden, want: []error{cos.ErrAccessDenied}},
		"Ceph RGW's QuotaExceeded, a 403, is full, not denied": {
			status: http.StatusForbidden, code: "QuotaExceeded", key: "k", want: []error{cos.ErrStoreFull},
		},
		"MinIO's XMinioStorageFull": {
			status: http.StatusInsufficientStorage, code: "XMinioStorageFull", key: "k", want: []error{cos.ErrStoreFull},
		},
		"MinIO's bucket quota, a 400": {
			status: http.StatusBadRequest, code: "XMinioAdminBucketQuotaExceeded", key: "k", want: []error{cos.ErrStoreFull},
		},
		"InsufficientStorage": {
			status: http.StatusInsufficientStorage, code: "InsufficientStorage", key: "k", want: []error{cos.ErrStoreFull},
		},
		"any 507":              {status: http.StatusInsufficientStorage, code: "InternalError", key: "k", want: []error{cos.ErrStoreFull}},
		"a 507 without a code": {status: http.StatusInsufficientStorage, want: []error{cos.ErrStoreFull}},
		"EntityTooLarge is one object, not the bucket": {
			status: http.StatusBadRequest, code: "EntityTooLarge", key: "k",
		},
		"a 413":              {status: http.StatusRequestEntityTooLarge, key: "k"},
		"InternalError":      {status: http.StatusInternalServerError, code: "InternalError", key: "k"},
		"ServiceUnavailable": {status: http.StatusServiceUnavailable, code: "ServiceUnavailable"},
		"FileAlreadyExists":  {status: http.StatusConflict, code: "FileAlreadyExists", key: "k"},
		"a redirect":         {status: http.StatusTemporaryRedirect, want: []error{cos.ErrRedirect}},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			err := &cos.ResponseError{Op: "op", Bucket: bucket, Key: tc.key, StatusCode: tc.status, Code: tc.code}
			if diff := errorsDiff(tc.want, err); diff != "" {
				t.Errorf("%v matches (-want +got):\n%s", err, diff)
			}
		})
	}
}
