package checkpoint

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"maps"
	"net/http"
	"sort"
	"strconv"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	awshttp "github.com/aws/aws-sdk-go-v2/aws/transport/http"
	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/s3/types"
)

// S3 option names. The first four are those of Flink's S3 file systems.
const (
	OptS3Endpoint  = "s3.endpoint"
	OptS3PathStyle = "s3.path.style.access"
	OptS3AccessKey = "s3.access-key"
	OptS3SecretKey = "s3.secret-key"
	OptS3Region    = "s3.region"
)

const defaultS3Region = "us-east-1"

// s3Storage keeps objects under a key prefix of one bucket.
type s3Storage struct {
	client *s3.Client
	bucket string
	prefix string // "" or ends with "/"
	uri    string
	opts   map[string]string
}

func newS3Storage(ctx context.Context, uri, rest string, opts map[string]string) (*s3Storage, error) {
	bucket, prefix, _ := strings.Cut(rest, "/")
	if bucket == "" {
		return nil, fmt.Errorf("checkpoint storage %q: missing bucket (expected s3://bucket/prefix)", uri)
	}
	prefix = strings.Trim(prefix, "/")
	if prefix != "" {
		prefix += "/"
	}
	region := opts[OptS3Region]
	if region == "" {
		region = defaultS3Region
	}
	pathStyle := false
	if v, ok := opts[OptS3PathStyle]; ok {
		b, err := strconv.ParseBool(strings.TrimSpace(v))
		if err != nil {
			return nil, fmt.Errorf("invalid value %q for option '%s' (allowed: true, false)", v, OptS3PathStyle)
		}
		pathStyle = b
	}
	loadOpts := []func(*config.LoadOptions) error{config.WithRegion(region)}
	ak, sk := opts[OptS3AccessKey], opts[OptS3SecretKey]
	switch {
	case ak != "" && sk != "":
		loadOpts = append(loadOpts, config.WithCredentialsProvider(credentials.NewStaticCredentialsProvider(ak, sk, "")))
	case ak != "" || sk != "":
		return nil, fmt.Errorf("checkpoint storage %q: options '%s' and '%s' must be set together", uri, OptS3AccessKey, OptS3SecretKey)
	}
	cfg, err := config.LoadDefaultConfig(ctx, loadOpts...)
	if err != nil {
		return nil, fmt.Errorf("checkpoint storage %q: loading AWS configuration: %w", uri, err)
	}
	endpoint := opts[OptS3Endpoint]
	client := s3.NewFromConfig(cfg, func(o *s3.Options) {
		if endpoint != "" {
			if !strings.Contains(endpoint, "://") {
				endpoint = "https://" + endpoint
			}
			o.BaseEndpoint = aws.String(endpoint)
		}
		o.UsePathStyle = pathStyle
		// Whole-object checksums are not needed (we verify SHA-256 ourselves)
		// and several S3-compatible servers reject the trailing-checksum
		// encoding the SDK would otherwise use.
		o.RequestChecksumCalculation = aws.RequestChecksumCalculationWhenRequired
		o.ResponseChecksumValidation = aws.ResponseChecksumValidationWhenRequired
	})
	return &s3Storage{client: client, bucket: bucket, prefix: prefix, uri: uri, opts: maps.Clone(opts)}, nil
}

func (s *s3Storage) location() (string, map[string]string) { return s.uri, s.opts }

func (s *s3Storage) key(p string) (string, error) {
	if err := validPath(p); err != nil {
		return "", err
	}
	return s.prefix + p, nil
}

func (s *s3Storage) describe(key string) string { return "s3://" + s.bucket + "/" + key }

// Put uploads in one PutObject, which S3 makes visible atomically. The body
// must be seekable for request signing over plain HTTP, so a non-seekable
// reader is buffered.
func (s *s3Storage) Put(ctx context.Context, p string, data io.Reader, size int64) error {
	key, err := s.key(p)
	if err != nil {
		return err
	}
	body, ok := data.(io.ReadSeeker)
	if !ok || size < 0 {
		buf, err := io.ReadAll(data)
		if err != nil {
			return fmt.Errorf("put %s: %w", s.describe(key), err)
		}
		body = bytes.NewReader(buf)
		if size < 0 {
			size = int64(len(buf))
		}
	}
	// Check the length before sending: S3 would store a short body under a
	// wrong Content-Length only as a failed request, but a long one silently
	// truncated.
	end, err := body.Seek(0, io.SeekEnd)
	if err == nil {
		var start int64
		start, err = body.Seek(0, io.SeekStart)
		end -= start
	}
	if err != nil {
		return fmt.Errorf("put %s: %w", s.describe(key), err)
	}
	if end != size {
		return fmt.Errorf("put %s: source has %d bytes, expected %d", s.describe(key), end, size)
	}
	_, err = s.client.PutObject(ctx, &s3.PutObjectInput{
		Bucket:        aws.String(s.bucket),
		Key:           aws.String(key),
		Body:          body,
		ContentLength: aws.Int64(size),
	})
	if err != nil {
		return fmt.Errorf("put %s: %w", s.describe(key), err)
	}
	return nil
}

func (s *s3Storage) Get(ctx context.Context, p string) (io.ReadCloser, error) {
	key, err := s.key(p)
	if err != nil {
		return nil, err
	}
	out, err := s.client.GetObject(ctx, &s3.GetObjectInput{Bucket: aws.String(s.bucket), Key: aws.String(key)})
	if err != nil {
		if s3NotFound(err) {
			return nil, fmt.Errorf("get %s: %w", s.describe(key), fs.ErrNotExist)
		}
		return nil, fmt.Errorf("get %s: %w", s.describe(key), err)
	}
	return out.Body, nil
}

func (s *s3Storage) Stat(ctx context.Context, p string) (int64, bool, error) {
	key, err := s.key(p)
	if err != nil {
		return 0, false, err
	}
	out, err := s.client.HeadObject(ctx, &s3.HeadObjectInput{Bucket: aws.String(s.bucket), Key: aws.String(key)})
	if err != nil {
		if s3NotFound(err) {
			return 0, false, nil
		}
		return 0, false, fmt.Errorf("stat %s: %w", s.describe(key), err)
	}
	return aws.ToInt64(out.ContentLength), true, nil
}

func (s *s3Storage) List(ctx context.Context, prefix string) ([]string, error) {
	pages := s3.NewListObjectsV2Paginator(s.client, &s3.ListObjectsV2Input{
		Bucket: aws.String(s.bucket),
		Prefix: aws.String(s.prefix + prefix),
	})
	var out []string
	for pages.HasMorePages() {
		page, err := pages.NextPage(ctx)
		if err != nil {
			return nil, fmt.Errorf("list %s: %w", s.describe(s.prefix+prefix), err)
		}
		for _, obj := range page.Contents {
			k := strings.TrimPrefix(aws.ToString(obj.Key), s.prefix)
			if validPath(k) == nil {
				out = append(out, k)
			}
		}
	}
	// ListObjectsV2 returns keys in UTF-8 binary order already; sorting keeps
	// the contract independent of the server.
	sort.Strings(out)
	return out, nil
}

func (s *s3Storage) Delete(ctx context.Context, p string) error {
	key, err := s.key(p)
	if err != nil {
		return err
	}
	_, err = s.client.DeleteObject(ctx, &s3.DeleteObjectInput{Bucket: aws.String(s.bucket), Key: aws.String(key)})
	if err != nil && !s3NotFound(err) {
		return fmt.Errorf("delete %s: %w", s.describe(key), err)
	}
	return nil
}

func s3NotFound(err error) bool {
	var nsk *types.NoSuchKey
	var nf *types.NotFound
	if errors.As(err, &nsk) || errors.As(err, &nf) {
		return true
	}
	var re *awshttp.ResponseError
	return errors.As(err, &re) && re.HTTPStatusCode() == http.StatusNotFound
}

func (s *s3Storage) getETag(ctx context.Context, p string) ([]byte, string, bool, error) {
	key, err := s.key(p)
	if err != nil {
		return nil, "", false, err
	}
	out, err := s.client.GetObject(ctx, &s3.GetObjectInput{Bucket: aws.String(s.bucket), Key: aws.String(key)})
	if err != nil {
		if s3NotFound(err) {
			return nil, "", false, nil
		}
		return nil, "", false, fmt.Errorf("get %s: %w", s.describe(key), err)
	}
	defer out.Body.Close()
	data, err := io.ReadAll(out.Body)
	if err != nil {
		return nil, "", false, fmt.Errorf("get %s: %w", s.describe(key), err)
	}
	return data, aws.ToString(out.ETag), true, nil
}

// putIf is a conditional PutObject: If-None-Match: * without ifMatch,
// If-Match: ifMatch with it. S3 (since 2024) and S3-compatible servers answer
// 412 Precondition Failed when the condition does not hold; 409 Conflict
// reports a concurrent conditional write of the same key.
func (s *s3Storage) putIf(ctx context.Context, p string, data []byte, ifMatch string) (string, error) {
	key, err := s.key(p)
	if err != nil {
		return "", err
	}
	in := &s3.PutObjectInput{
		Bucket:        aws.String(s.bucket),
		Key:           aws.String(key),
		Body:          bytes.NewReader(data),
		ContentLength: aws.Int64(int64(len(data))),
	}
	if ifMatch == "" {
		in.IfNoneMatch = aws.String("*")
	} else {
		in.IfMatch = aws.String(ifMatch)
	}
	out, err := s.client.PutObject(ctx, in)
	if err != nil {
		var re *awshttp.ResponseError
		if errors.As(err, &re) && (re.HTTPStatusCode() == http.StatusPreconditionFailed || re.HTTPStatusCode() == http.StatusConflict) {
			return "", fmt.Errorf("put %s: %w", s.describe(key), errPreconditionFailed)
		}
		return "", fmt.Errorf("put %s: %w", s.describe(key), err)
	}
	etag := aws.ToString(out.ETag)
	if etag == "" {
		return "", fmt.Errorf("put %s: the server returned no ETag, so the lease cannot be renewed conditionally", s.describe(key))
	}
	return etag, nil
}
