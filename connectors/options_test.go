package connectors_test

import (
	"strings"
	"testing"
	"time"

	"github.com/flinksql/flinksql/connectors"
	"github.com/flinksql/flinksql/formats"
	"github.com/flinksql/flinksql/types"
)

type fakeFactory struct {
	id                 string
	required, optional []string
}

func (f fakeFactory) Identifier() string        { return f.id }
func (f fakeFactory) RequiredOptions() []string { return f.required }
func (f fakeFactory) OptionalOptions() []string { return f.optional }

type fakeSourceFactory struct{ fakeFactory }

func (fakeSourceFactory) CreateSource(*connectors.TableContext) (connectors.ScanSource, error) {
	return nil, nil
}

// fakeFormat records the context it was given.
type fakeFormat struct {
	id   string
	opts []string
	got  *formats.Context
}

func (f *fakeFormat) Identifier() string        { return f.id }
func (f *fakeFormat) OptionalOptions() []string { return f.opts }
func (f *fakeFormat) CreateDecoder(c *formats.Context) (formats.Decoder, error) {
	f.got = c
	return nil, nil
}
func (f *fakeFormat) CreateEncoder(c *formats.Context) (formats.Encoder, error) {
	f.got = c
	return nil, nil
}

func tableContext(opts map[string]string, reg *formats.Registry) *connectors.TableContext {
	return &connectors.TableContext{
		Name:       "default_catalog.default_database.t",
		ObjectName: "t",
		Options:    opts,
		Physical:   types.Schema{{Name: "id", Type: types.BigIntType}, {Name: "name", Type: types.StringType}},
		Formats:    reg,
	}
}

func TestValidateOptions(t *testing.T) {
	reg := formats.NewRegistry()
	reg.Register(&fakeFormat{id: "json", opts: []string{"fail-on-missing-field", "ignore-parse-errors"}})
	datagenLike := fakeSourceFactory{fakeFactory{id: "datagen", optional: []string{"rows-per-second", "fields.#.kind"}}}
	fsLike := fakeFactory{id: "filesystem", required: []string{"path", "format"}, optional: []string{"sink.parallelism"}}
	kafkaLike := fakeSourceFactory{fakeFactory{id: "kafka", required: []string{"topic"}, optional: []string{"key.format", "value.format"}}}

	tests := []struct {
		name       string
		f          connectors.Factory
		opts       map[string]string
		formatKeys []string
		want       string // "" means valid
	}{
		{
			name: "unknown option",
			f:    datagenLike,
			opts: map[string]string{"connector": "datagen", "foo": "1", "rows-per-second": "5"},
			want: "Unsupported options found for 'datagen'.\n\nUnsupported options:\n\nfoo\n\nSupported options:\n\n" +
				"connector\nfields.id.kind\nfields.name.kind\nrows-per-second\n" +
				"scan.watermark.alignment.group\nscan.watermark.alignment.max-drift\nscan.watermark.alignment.update-interval\n" +
				"scan.watermark.emit.strategy\nscan.watermark.idle-timeout",
		},
		{
			name: "field option for a column that does not exist",
			f:    datagenLike,
			opts: map[string]string{"connector": "datagen", "fields.nope.kind": "random"},
			want: "Unsupported options found for 'datagen'.\n\nUnsupported options:\n\nfields.nope.kind\n\n",
		},
		{
			name: "field option for existing column and watermark option",
			f:    datagenLike,
			opts: map[string]string{"connector": "datagen", "fields.id.kind": "sequence", "scan.watermark.idle-timeout": "1 s"},
		},
		{
			name: "missing required options",
			f:    fsLike,
			opts: map[string]string{"connector": "filesystem"},
			want: "One or more required options are missing.\n\nMissing required options are:\n\nformat\npath",
		},
		{
			name: "missing one required option",
			f:    fsLike,
			opts: map[string]string{"connector": "filesystem", "format": "json"},
			want: "One or more required options are missing.\n\nMissing required options are:\n\npath",
		},
		{
			name:       "format options",
			f:          fsLike,
			opts:       map[string]string{"connector": "filesystem", "format": "json", "path": "/x", "json.ignore-parse-errors": "true"},
			formatKeys: []string{"format"},
		},
		{
			name:       "unknown format option",
			f:          fsLike,
			opts:       map[string]string{"connector": "filesystem", "format": "json", "path": "/x", "json.nope": "true"},
			formatKeys: []string{"format"},
			want: "Unsupported options found for 'filesystem'.\n\nUnsupported options:\n\njson.nope\n\nSupported options:\n\n" +
				"connector\nformat\njson.fail-on-missing-field\njson.ignore-parse-errors\npath\nsink.parallelism",
		},
		{
			name: "sink-only factory rejects watermark options",
			f:    fsLike,
			opts: map[string]string{"connector": "filesystem", "format": "json", "path": "/x", "scan.watermark.idle-timeout": "1 s"},
			want: "Unsupported options found for 'filesystem'.\n\nUnsupported options:\n\nscan.watermark.idle-timeout\n\n",
		},
		{
			name: "key and value formats",
			f:    kafkaLike,
			opts: map[string]string{"connector": "kafka", "topic": "t", "key.format": "json", "value.format": "json",
				"key.json.ignore-parse-errors": "true", "value.json.fail-on-missing-field": "true"},
			formatKeys: []string{"key.format", "value.format"},
		},
		{
			name: "key format option under the value prefix is unknown",
			f:    kafkaLike,
			opts: map[string]string{"connector": "kafka", "topic": "t", "key.format": "json",
				"value.json.fail-on-missing-field": "true"},
			formatKeys: []string{"key.format", "value.format"},
			want:       "Unsupported options found for 'kafka'.\n\nUnsupported options:\n\nvalue.json.fail-on-missing-field\n\n",
		},
		{
			name:       "unknown format",
			f:          fsLike,
			opts:       map[string]string{"connector": "filesystem", "format": "avro", "path": "/x"},
			formatKeys: []string{"format"},
			want:       "Could not find any format factory for identifier 'avro' in the classpath.\n\nAvailable factory identifiers are:\n\njson",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := connectors.ValidateOptions(tableContext(tt.opts, reg), tt.f, tt.formatKeys...)
			switch {
			case tt.want == "" && err != nil:
				t.Fatalf("unexpected error: %v", err)
			case tt.want != "" && err == nil:
				t.Fatalf("expected error %q, got none", tt.want)
			case tt.want != "" && !strings.HasPrefix(err.Error(), tt.want):
				t.Fatalf("error:\n%s\nwant prefix:\n%s", err, tt.want)
			}
		})
	}
}

func TestCreateDecoderStripsPrefix(t *testing.T) {
	ff := &fakeFormat{id: "json", opts: []string{"ignore-parse-errors"}}
	reg := formats.NewRegistry()
	reg.Register(ff)
	tc := tableContext(map[string]string{"value.format": "json", "value.json.ignore-parse-errors": "true",
		"key.json.ignore-parse-errors": "false", "json.x": "y"}, reg)
	schema := types.Schema{{Name: "a", Type: types.IntType}}
	if _, err := connectors.CreateDecoder(tc, "value.format", schema); err != nil {
		t.Fatal(err)
	}
	if got := ff.got; len(got.Options) != 1 || got.Options["ignore-parse-errors"] != "true" ||
		got.Prefix != "value.json." || len(got.Schema) != 1 || got.Loc != time.UTC {
		t.Fatalf("unexpected context %+v", got)
	}
	if _, err := connectors.CreateEncoder(tc, "format", schema); err == nil ||
		err.Error() != "Table options do not contain an option key 'format' for discovering a format." {
		t.Fatalf("unexpected error %v", err)
	}
}

func TestTypedGetters(t *testing.T) {
	o := connectors.Options{
		"n": "42", "big": "9000000000", "bad": "x1", "b": "TRUE", "d": "10 s", "m": "128mb",
		"mode": "Latest-Offset", "neg": "-3 s",
	}
	if v, err := o.Int("n", 0); err != nil || v != 42 {
		t.Fatalf("Int: %v %v", v, err)
	}
	if v, err := o.Int("absent", 7); err != nil || v != 7 {
		t.Fatalf("Int default: %v %v", v, err)
	}
	if _, err := o.Int("big", 0); err == nil || err.Error() != "Invalid value for option 'big'. Expected an integer, but was: 9000000000" {
		t.Fatalf("Int overflow: %v", err)
	}
	if v, err := o.Long("big", 0); err != nil || v != 9000000000 {
		t.Fatalf("Long: %v %v", v, err)
	}
	if v, err := o.Bool("b", false); err != nil || !v {
		t.Fatalf("Bool: %v %v", v, err)
	}
	if _, err := o.Bool("bad", false); err == nil || err.Error() != "Invalid value for option 'bad'. Expected one of [true, false], but was: x1" {
		t.Fatalf("Bool bad: %v", err)
	}
	if v, err := o.Duration("d", 0); err != nil || v != 10*time.Second {
		t.Fatalf("Duration: %v %v", v, err)
	}
	if _, err := o.Duration("neg", 0); err == nil || err.Error() !=
		"Invalid value for option 'neg'. Expected a duration such as '500 ms', '10 s', '1 min', '2 h' or '1 d', but was: -3 s" {
		t.Fatalf("Duration bad: %v", err)
	}
	if v, err := o.MemorySize("m", 0); err != nil || v != 128<<20 {
		t.Fatalf("MemorySize: %v %v", v, err)
	}
	allowed := []string{"earliest-offset", "latest-offset", "group-offsets"}
	if v, err := o.Enum("mode", allowed, ""); err != nil || v != "latest-offset" {
		t.Fatalf("Enum: %v %v", v, err)
	}
	if _, err := o.Enum("bad", allowed, ""); err == nil || err.Error() !=
		"Invalid value for option 'bad'. Expected one of [earliest-offset, latest-offset, group-offsets], but was: x1" {
		t.Fatalf("Enum bad: %v", err)
	}
}

func TestParseDuration(t *testing.T) {
	tests := []struct {
		in   string
		want time.Duration
		ok   bool
	}{
		{"100 ms", 100 * time.Millisecond, true},
		{"10s", 10 * time.Second, true},
		{"1 min", time.Minute, true},
		{"2 h", 2 * time.Hour, true},
		{"5d", 5 * 24 * time.Hour, true},
		{"250", 250 * time.Millisecond, true},
		{"3 MINUTES", 3 * time.Minute, true},
		{"7 m", 7 * time.Minute, true},
		{"1 seconds", time.Second, true},
		{"  42 ns ", 42, true},
		{"1.5 s", 0, false},
		{"s", 0, false},
		{"10 parsecs", 0, false},
		{"", 0, false},
		{"99999999999999999999 d", 0, false},
	}
	for _, tt := range tests {
		got, err := connectors.ParseDuration(tt.in)
		if (err == nil) != tt.ok || got != tt.want {
			t.Errorf("ParseDuration(%q) = %v, %v; want %v ok=%v", tt.in, got, err, tt.want, tt.ok)
		}
	}
}

func TestParseMemorySize(t *testing.T) {
	tests := []struct {
		in   string
		want int64
		ok   bool
	}{
		{"128mb", 128 << 20, true},
		{"1 gb", 1 << 30, true},
		{"512kb", 512 << 10, true},
		{"64 m", 64 << 20, true},
		{"100", 100, true},
		{"7 bytes", 7, true},
		{"2T", 2 << 40, true},
		{"1 gibibytes", 1 << 30, true},
		{"1 pb", 0, false},
		{"mb", 0, false},
	}
	for _, tt := range tests {
		got, err := connectors.ParseMemorySize(tt.in)
		if (err == nil) != tt.ok || got != tt.want {
			t.Errorf("ParseMemorySize(%q) = %v, %v; want %v ok=%v", tt.in, got, err, tt.want, tt.ok)
		}
	}
}
