package costest

import (
	"encoding/xml"
	"net/http"
)

// apiError is an error answer: an HTTP status and COS's error code and
// message.
type apiError struct {
	status  int
	code    string
	message string
}

// Error answers used by the server. Messages follow COS's wording.
var (
	errNoSuchBucket = &apiError{http.StatusNotFound, "NoSuchBucket", "The specified bucket does not exist."}
	errNoSuchKey    = &apiError{http.StatusNotFound, "NoSuchKey", "The specified key does not exist."}
	errAccessDenied = &apiError{http.StatusForbidden, "AccessDenied", "Access Denied."}
	errInvalidAK    = &apiError{http.StatusForbidden, "InvalidAccessKeyId", "The Access Key Id you provided does not exist in our records."}
	errBadSignature = &apiError{http.StatusForbidden, "SignatureDoesNotMatch", "The Signature you specified is invalid."}
	errExpired      = &apiError{http.StatusForbidden, "AccessDenied", "Request has expired"}
	errSkewed       = &apiError{http.StatusForbidden, "RequestTimeTooSkewed", "The difference between the request time and the server's time is too large."}
	errBadToken     = &apiError{http.StatusForbidden, "InvalidAccessKeyId", "The security token is missing or does not belong to the temporary key."}
	errNotAllowed   = &apiError{http.StatusMethodNotAllowed, "MethodNotAllowed", "The specified method is not allowed against this resource."}
	errNotImpl      = &apiError{http.StatusNotImplemented, "NotImplemented", "This server does not implement the requested sub-resource or parameter."}
	errBadDigest    = &apiError{http.StatusBadRequest, "BadDigest", "The Content-MD5 you specified did not match what was received."}
	errTooLarge     = &apiError{http.StatusBadRequest, "EntityTooLarge", "Your proposed upload exceeds the maximum allowed object size."}
	errBadArgument  = &apiError{http.StatusBadRequest, "InvalidArgument", "Invalid Argument."}
	// errObjectExists answers a PUT Object with x-cos-forbid-overwrite:
	// true to a key that exists.
	errObjectExists = &apiError{http.StatusConflict, "FileAlreadyExists", "The object you specified already exists and can not be overwritten."}
	// errInsufficientStorage answers a PUT Object beyond the bucket's
	// quota (Server.SetQuota), and a fault of FailNext with 507.
	errInsufficientStorage = &apiError{http.StatusInsufficientStorage, "InsufficientStorage", "The bucket has reached its quota: delete objects to make room."}
)

// faultError is the answer injected by Server.FailNext for status.
func faultError(status int) *apiError {
	switch status {
	case http.StatusInternalServerError:
		return &apiError{status, "InternalError", "We encountered an internal error. Please try again."}
	case http.StatusServiceUnavailable:
		return &apiError{status, "ServiceUnavailable", "Reduce your request rate."}
	case http.StatusForbidden:
		return errAccessDenied
	case http.StatusNotFound:
		return errNoSuchBucket
	case http.StatusInsufficientStorage:
		return errInsufficientStorage
	}
	return &apiError{status, "InjectedFault", http.StatusText(status)}
}

type errorDoc struct {
	XMLName   xml.Name `xml:"Error"`
	Code      string   `xml:"Code"`
	Message   string   `xml:"Message"`
	Resource  string   `xml:"Resource"`
	RequestID string   `xml:"RequestId"`
	TraceID   string   `xml:"TraceId"`
}

// errorBody renders e as COS's XML <Error> document for request r.
func errorBody(r *http.Request, requestID string, e *apiError) []byte {
	return xmlBody(errorDoc{
		Code: e.code, Message: e.message, Resource: r.Host + r.URL.Path,
		RequestID: requestID, TraceID: requestID,
	})
}

// listResult is a GET Bucket answer.
type listResult struct {
	XMLName        xml.Name       `xml:"ListBucketResult"`
	Name           string         `xml:"Name"`
	Prefix         string         `xml:"Prefix"`
	Marker         string         `xml:"Marker"`
	MaxKeys        int            `xml:"MaxKeys"`
	Delimiter      string         `xml:"Delimiter,omitempty"`
	IsTruncated    bool           `xml:"IsTruncated"`
	NextMarker     string         `xml:"NextMarker,omitempty"`
	CommonPrefixes []commonPrefix `xml:"CommonPrefixes,omitempty"`
	Contents       []listEntry    `xml:"Contents"`
}

type commonPrefix struct {
	Prefix string `xml:"Prefix"`
}

type listEntry struct {
	Key          string `xml:"Key"`
	LastModified string `xml:"LastModified"`
	ETag         string `xml:"ETag"`
	Size         int    `xml:"Size"`
	OwnerID      string `xml:"Owner>ID"`
	StorageClass string `xml:"StorageClass"`
}

// xmlBody marshals v with the XML declaration in front. The documents
// marshalled here cannot fail.
func xmlBody(v any) []byte {
	body, err := xml.Marshal(v)
	if err != nil {
		panic(err)
	}
	return append([]byte(xml.Header), body...)
}
