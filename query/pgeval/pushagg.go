package pgeval

import "context"

// Aggregation pushed into a relation. A query over one relation whose
// GROUP BY keys are plain columns and whose aggregates are count(*),
// count, sum, avg, min and max of plain columns (no DISTINCT, FILTER or
// ORDER BY inside them), with every filter exact (Exacter), may let the
// relation aggregate: a user table's tablet servers then compute partial
// results next to the data and the gateway merges them (query/tablerel.go),
// instead of every row crossing the network. HAVING, ORDER BY, LIMIT and
// the select list still run here, over the groups.

// AggCall is one aggregate: Func is "count", "sum", "min" or "max"; Arg
// is the column it reads, -1 for count(*). avg(x) is asked for as sum(x)
// and count(x), and divided here with PostgreSQL's numeric or float
// division, as PostgreSQL's own avg does.
type AggCall struct {
	Func string
	Arg  int
}

// AggregateRequest is what a query asks a relation to aggregate.
type AggregateRequest struct {
	// Filters are the query's filters on the relation (all exact).
	Filters []Filter
	// GroupBy are the grouping columns.
	GroupBy []int
	Aggs    []AggCall
	Args    []any
	Env     *Env
}

// Aggregator is implemented by a relation that can aggregate its rows.
type Aggregator interface {
	// CanAggregate reports, when the query is planned, whether the
	// relation can run req.
	CanAggregate(req AggregateRequest) bool
	// Aggregate returns one row per group: the GroupBy columns' values,
	// then each aggregate's final value with PostgreSQL's result type
	// (count bigint; sum of int2/int4 bigint, of int8 and numeric
	// numeric, of float4 real, of float8 double precision; min and max
	// the column's type; sum, min and max of no rows NULL).
	// Without GROUP BY there is exactly one row. handled is false if it
	// cannot after all (such as a transaction's buffered writes to the
	// table); the engine then aggregates the scanned rows itself.
	Aggregate(ctx context.Context, req AggregateRequest) (rows Rows, handled bool, err error)
}
