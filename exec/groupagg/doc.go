// Package groupagg owns the operators of unwindowed, updating aggregation and
// of changelog conversion: the group aggregate (with mini-batch folding and
// state TTL), ChangelogNormalize (upsert stream → full changelog), the sink
// upsert materializer, and DropUpdateBefore.
//
// The operators follow the changelog semantics of Flink's runtime operators of
// the same purpose (GroupAggFunction, MiniBatchGroupAggFunction,
// ProcTimeDeduplicateKeepLastRowFunction on changelog input,
// SinkUpsertMaterializer, DropUpdateBeforeFunction), so that a query gives the
// same sequence of +I/-U/+U/-D rows as on Flink.
//
// Per-key state lives in the runtime's keyed-state backend (state/kv: the
// operators are exec.KeyedOperators), behind the decoded write-back cache
// of exec/internal/statecache, whose entries' values this package keeps in
// flat arrays indexed by the cache's ids, so processing rows of cached
// keys allocates nothing and decodes nothing (cache.go, keyed.go).
package groupagg
