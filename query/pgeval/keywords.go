package pgeval

import "strings"

// keywordList is PostgreSQL 15's keyword list (pg_get_keywords()):
// word:catcode:barelabel, catcode U unreserved, C unreserved (cannot be
// function or type), T reserved (can be function or type), R reserved.
const keywordList = "" +
	"abort:U:1 absolute:U:1 access:U:1 action:U:1 add:U:1 admin:U:1 after:U:1 aggregate:U:1 all:R:1 " +
	"also:U:1 alter:U:1 always:U:1 analyse:R:1 analyze:R:1 and:R:1 any:R:1 array:R:0 as:R:0 asc:R:1 " +
	"asensitive:U:1 assertion:U:1 assignment:U:1 asymmetric:R:1 at:U:1 atomic:U:1 attach:U:1 " +
	"attribute:U:1 authorization:T:1 backward:U:1 before:U:1 begin:U:1 between:C:1 bigint:C:1 binary:T:1 " +
	"bit:C:1 boolean:C:1 both:R:1 breadth:U:1 by:U:1 cache:U:1 call:U:1 called:U:1 cascade:U:1 " +
	"cascaded:U:1 case:R:1 cast:R:1 catalog:U:1 chain:U:1 char:C:0 character:C:0 characteristics:U:1 " +
	"check:R:1 checkpoint:U:1 class:U:1 close:U:1 cluster:U:1 coalesce:C:1 collate:R:1 collation:T:1 " +
	"column:R:1 columns:U:1 comment:U:1 comments:U:1 commit:U:1 committed:U:1 compression:U:1 " +
	"concurrently:T:1 configuration:U:1 conflict:U:1 connection:U:1 constraint:R:1 constraints:U:1 " +
	"content:U:1 continue:U:1 conversion:U:1 copy:U:1 cost:U:1 create:R:0 cross:T:1 csv:U:1 cube:U:1 " +
	"current:U:1 current_catalog:R:1 current_date:R:1 current_role:R:1 current_schema:T:1 " +
	"current_time:R:1 current_timestamp:R:1 current_user:R:1 cursor:U:1 cycle:U:1 data:U:1 database:U:1 " +
	"day:U:0 deallocate:U:1 dec:C:1 decimal:C:1 declare:U:1 default:R:1 defaults:U:1 deferrable:R:1 " +
	"deferred:U:1 definer:U:1 delete:U:1 delimiter:U:1 delimiters:U:1 depends:U:1 depth:U:1 desc:R:1 " +
	"detach:U:1 dictionary:U:1 disable:U:1 discard:U:1 distinct:R:1 do:R:1 document:U:1 domain:U:1 " +
	"double:U:1 drop:U:1 each:U:1 else:R:1 enable:U:1 encoding:U:1 encrypted:U:1 end:R:1 enum:U:1 " +
	"escape:U:1 event:U:1 except:R:0 exclude:U:1 excluding:U:1 exclusive:U:1 execute:U:1 exists:C:1 " +
	"explain:U:1 expression:U:1 extension:U:1 external:U:1 extract:C:1 false:R:1 family:U:1 fetch:R:0 " +
	"filter:U:0 finalize:U:1 first:U:1 float:C:1 following:U:1 for:R:0 force:U:1 foreign:R:1 forward:U:1 " +
	"freeze:T:1 from:R:0 full:T:1 function:U:1 functions:U:1 generated:U:1 global:U:1 grant:R:0 " +
	"granted:U:1 greatest:C:1 group:R:0 grouping:C:1 groups:U:1 handler:U:1 having:R:0 header:U:1 " +
	"hold:U:1 hour:U:0 identity:U:1 if:U:1 ilike:T:1 immediate:U:1 immutable:U:1 implicit:U:1 import:U:1 " +
	"in:R:1 include:U:1 including:U:1 increment:U:1 index:U:1 indexes:U:1 inherit:U:1 inherits:U:1 " +
	"initially:R:1 inline:U:1 inner:T:1 inout:C:1 input:U:1 insensitive:U:1 insert:U:1 instead:U:1 " +
	"int:C:1 integer:C:1 intersect:R:0 interval:C:1 into:R:0 invoker:U:1 is:T:1 isnull:T:0 isolation:U:1 " +
	"join:T:1 key:U:1 label:U:1 language:U:1 large:U:1 last:U:1 lateral:R:1 leading:R:1 leakproof:U:1 " +
	"least:C:1 left:T:1 level:U:1 like:T:1 limit:R:0 listen:U:1 load:U:1 local:U:1 localtime:R:1 " +
	"localtimestamp:R:1 location:U:1 lock:U:1 locked:U:1 logged:U:1 mapping:U:1 match:U:1 matched:U:1 " +
	"materialized:U:1 maxvalue:U:1 merge:U:1 method:U:1 minute:U:0 minvalue:U:1 mode:U:1 month:U:0 " +
	"move:U:1 name:U:1 names:U:1 national:C:1 natural:T:1 nchar:C:1 new:U:1 next:U:1 nfc:U:1 nfd:U:1 " +
	"nfkc:U:1 nfkd:U:1 no:U:1 none:C:1 normalize:C:1 normalized:U:1 not:R:1 nothing:U:1 notify:U:1 " +
	"notnull:T:0 nowait:U:1 null:R:1 nullif:C:1 nulls:U:1 numeric:C:1 object:U:1 of:U:1 off:U:1 " +
	"offset:R:0 oids:U:1 old:U:1 on:R:0 only:R:1 operator:U:1 option:U:1 options:U:1 or:R:1 order:R:0 " +
	"ordinality:U:1 others:U:1 out:C:1 outer:T:1 over:U:0 overlaps:T:0 overlay:C:1 overriding:U:1 " +
	"owned:U:1 owner:U:1 parallel:U:1 parameter:U:1 parser:U:1 partial:U:1 partition:U:1 passing:U:1 " +
	"password:U:1 placing:R:1 plans:U:1 policy:U:1 position:C:1 preceding:U:1 precision:C:0 prepare:U:1 " +
	"prepared:U:1 preserve:U:1 primary:R:1 prior:U:1 privileges:U:1 procedural:U:1 procedure:U:1 " +
	"procedures:U:1 program:U:1 publication:U:1 quote:U:1 range:U:1 read:U:1 real:C:1 reassign:U:1 " +
	"recheck:U:1 recursive:U:1 ref:U:1 references:R:1 referencing:U:1 refresh:U:1 reindex:U:1 " +
	"relative:U:1 release:U:1 rename:U:1 repeatable:U:1 replace:U:1 replica:U:1 reset:U:1 restart:U:1 " +
	"restrict:U:1 return:U:1 returning:R:0 returns:U:1 revoke:U:1 right:T:1 role:U:1 rollback:U:1 " +
	"rollup:U:1 routine:U:1 routines:U:1 row:C:1 rows:U:1 rule:U:1 savepoint:U:1 schema:U:1 schemas:U:1 " +
	"scroll:U:1 search:U:1 second:U:0 security:U:1 select:R:1 sequence:U:1 sequences:U:1 serializable:U:1 " +
	"server:U:1 session:U:1 session_user:R:1 set:U:1 setof:C:1 sets:U:1 share:U:1 show:U:1 similar:T:1 " +
	"simple:U:1 skip:U:1 smallint:C:1 snapshot:U:1 some:R:1 sql:U:1 stable:U:1 standalone:U:1 start:U:1 " +
	"statement:U:1 statistics:U:1 stdin:U:1 stdout:U:1 storage:U:1 stored:U:1 strict:U:1 strip:U:1 " +
	"subscription:U:1 substring:C:1 support:U:1 symmetric:R:1 sysid:U:1 system:U:1 table:R:1 tables:U:1 " +
	"tablesample:T:1 tablespace:U:1 temp:U:1 template:U:1 temporary:U:1 text:U:1 then:R:1 ties:U:1 " +
	"time:C:1 timestamp:C:1 to:R:0 trailing:R:1 transaction:U:1 transform:U:1 treat:C:1 trigger:U:1 " +
	"trim:C:1 true:R:1 truncate:U:1 trusted:U:1 type:U:1 types:U:1 uescape:U:1 unbounded:U:1 " +
	"uncommitted:U:1 unencrypted:U:1 union:R:0 unique:R:1 unknown:U:1 unlisten:U:1 unlogged:U:1 until:U:1 " +
	"update:U:1 user:R:1 using:R:1 vacuum:U:1 valid:U:1 validate:U:1 validator:U:1 value:U:1 values:C:1 " +
	"varchar:C:1 variadic:R:1 varying:U:0 verbose:T:1 version:U:1 view:U:1 views:U:1 volatile:U:1 " +
	"when:R:1 where:R:0 whitespace:U:1 window:R:0 with:R:0 within:U:0 without:U:0 work:U:1 wrapper:U:1 " +
	"write:U:1 xml:U:1 xmlattributes:C:1 xmlconcat:C:1 xmlelement:C:1 xmlexists:C:1 xmlforest:C:1 " +
	"xmlnamespaces:C:1 xmlparse:C:1 xmlpi:C:1 xmlroot:C:1 xmlserialize:C:1 xmltable:C:1 year:U:0 yes:U:1 " +
	"zone:U:1 "

// keyword is one pg_get_keywords() row.
type keyword struct {
	word, cat string
	bare      bool
}

// keywords are parsed from keywordList once; never written after.
var keywords, keywordCat = func() ([]keyword, map[string]string) {
	var out []keyword
	cat := map[string]string{}
	for _, f := range strings.Fields(keywordList) {
		p := strings.Split(f, ":")
		if len(p) != 3 {
			continue
		}
		out = append(out, keyword{word: p[0], cat: p[1], bare: p[2] == "1"})
		cat[p[0]] = p[1]
	}
	return out, cat
}()

// isKeyword reports whether quote_ident must quote word: any keyword
// but an unreserved one.
func isKeyword(word string) bool {
	c, ok := keywordCat[word]
	return ok && c != "U"
}

var catDesc = map[string]string{"U": "unreserved", "C": "unreserved (cannot be function or type name)", "T": "reserved (can be function or type name)", "R": "reserved"}
