#!/usr/bin/env python3
"""gen_command_docs.py -- writes core/commands/command_docs.c, the metadata
(key specs, arguments, ACL categories, complexity, tips, doc flags) of the
built-in commands, from the facts in Valkey's command descriptions.

Keel keeps its own tables in C; this script only reads the Valkey release
named below (from a git mirror, nothing is copied into the tree) so that the
facts clients see in COMMAND INFO / COMMAND DOCS are Valkey's. Free text
(summaries, history, argument summaries, key spec notes) is left out: the
summaries shown are Keel's own, from the family tables.

Usage (GIT_DIR: a clone or bare mirror of valkey-io/valkey):
  core/commands/gen_command_docs.py GIT_DIR | clang-format --assume-filename=x.c \
      > core/commands/command_docs.c
Add a command's fullname to COMMANDS when Keel registers a new one (and
to GETKEYS if Valkey gives it a get_keys_function), then rerun. Commands
newer than TAG get their metadata from later_docs() instead."""
import json
import subprocess
import sys

TAG = "8.0.1"

# Every built-in command and subcommand Keel registers, by fullname.
COMMANDS = """
get set setnx setex psetex getex getdel getset mget mset msetnx append strlen
setrange getrange substr incr decr incrby decrby incrbyfloat
del unlink exists touch type rename renamenx move copy keys scan randomkey
dbsize select swapdb flushdb flushall expire pexpire expireat pexpireat ttl
pttl expiretime pexpiretime persist
object object|encoding object|freq object|idletime object|refcount object|help
memory memory|usage memory|stats memory|doctor memory|malloc-stats memory|purge memory|help
ping echo hello auth quit reset
client client|id client|getname client|setname client|list client|info
client|kill client|setinfo client|no-touch client|reply client|no-evict
client|help client|unblock client|pause client|unpause client|tracking client|caching client|getredir client|trackinginfo
monitor latency latency|latest latency|history latency|reset latency|graph
latency|doctor latency|histogram latency|help
command command|count command|info command|docs command|list command|getkeys
command|getkeysandflags command|help
info config config|get config|set config|resetstat config|rewrite config|help
slowlog slowlog|get slowlog|len slowlog|reset slowlog|help
commandlog commandlog|get commandlog|len commandlog|reset commandlog|help
readonly readwrite time shutdown save bgsave lastsave debug
multi exec discard watch unwatch
module module|load module|loadex module|list module|unload module|help
hset hsetnx hmset hget hmget hdel hlen hstrlen hexists hkeys hvals hgetall
hincrby hincrbyfloat hrandfield hscan
hexpire hpexpire hexpireat hpexpireat httl hpttl hexpiretime hpexpiretime
hpersist hgetex hsetex hgetdel
lpush rpush lpushx rpushx linsert llen lindex lset lrange ltrim lpop rpop lrem
lpos rpoplpush lmove lmpop blpop brpop brpoplpush blmove blmpop
sadd srem smove sismember smismember scard spop srandmember sinter sintercard
sinterstore sunion sunionstore sdiff sdiffstore smembers sscan
zadd zincrby zrem zremrangebyscore zremrangebyrank zremrangebylex zunion zinter
zdiff zunionstore zinterstore zdiffstore zintercard zrange zrangestore
zrangebyscore zrevrangebyscore zrangebylex zrevrangebylex zrevrange zcount
zlexcount zcard zscore zmscore zrank zrevrank zpopmin zpopmax zmpop zrandmember
zscan bzpopmin bzpopmax bzmpop
xadd xrange xrevrange xlen xdel xtrim xsetid xread
xgroup xgroup|create xgroup|setid xgroup|destroy xgroup|createconsumer
xgroup|delconsumer xgroup|help xreadgroup xack xpending xclaim xautoclaim
xinfo xinfo|stream xinfo|groups xinfo|consumers xinfo|help
geoadd geopos geodist geohash georadius georadius_ro georadiusbymember
georadiusbymember_ro geosearch geosearchstore
sort sort_ro
subscribe unsubscribe psubscribe punsubscribe publish ssubscribe sunsubscribe
spublish pubsub pubsub|channels pubsub|numpat pubsub|numsub pubsub|shardchannels
pubsub|shardnumsub pubsub|help
setbit getbit bitcount bitpos bitop bitfield bitfield_ro lcs delifeq msetex
pfadd pfcount pfmerge pfdebug pfselftest
""".split()

# Valkey flags Keel's family tables do not carry (they have no effect in
# Keel, but COMMAND INFO shows them).
EXTRA_FLAGS = {
    "NO_ASYNC_LOADING": "CMD_NO_ASYNC_LOADING",
    "NO_MANDATORY_KEYS": "CMD_NO_MANDATORY_KEYS",
    "ASKING": "CMD_ASKING",
}
ARG_TYPES = {
    "string": "ARG_STRING", "integer": "ARG_INTEGER", "double": "ARG_DOUBLE",
    "key": "ARG_KEY", "pattern": "ARG_PATTERN", "unix-time": "ARG_UNIX_TIME",
    "pure-token": "ARG_PURE_TOKEN", "oneof": "ARG_ONEOF", "block": "ARG_BLOCK",
}
# Commands whose key flags depend on the arguments (Valkey's getkeys_proc).
GETKEYS = {"set": "command_set_get_keys", "sort": "command_sort_get_keys",
           "sort_ro": "command_sort_ro_get_keys"}


def key_arg():
    return {"name": "key", "type": "key", "key_spec_index": 0}


def fields_block(with_values=False):
    field = [{"name": "field", "type": "string"}]
    if with_values:
        field.append({"name": "value", "type": "string"})
    items = ({"name": "data", "type": "block", "multiple": True, "arguments": field}
             if with_values else dict(field[0], multiple=True))
    return {"name": "fields", "type": "block", "token": "FIELDS", "arguments": [
        {"name": "numfields", "type": "integer"}, items]}


def one_key(flags):
    return [{"flags": flags, "begin_search": {"index": {"pos": 1}},
             "find_keys": {"range": {"lastkey": 0, "step": 1, "limit": 0}}}]


def tokens(name, names, types=None):
    """A optional oneof of tokens; types gives an argument's type by token."""
    types = types or {}
    return {"name": name, "type": "oneof", "optional": True, "arguments": [
        {"name": types[t][0], "type": types[t][1], "token": t} if t in types else
        {"name": t.lower(), "type": "pure-token", "token": t} for t in names]}


def later_command(complexity, flags, args):
    return {"group": "hash", "since": "9.0.0", "complexity": complexity,
            "acl_categories": ["HASH"], "key_specs": one_key(flags), "arguments": args}


EXPIRE_TIME = {"hexpire": ("seconds", "integer"), "hpexpire": ("milliseconds", "integer"),
               "hexpireat": ("unix-time-seconds", "unix-time"),
               "hpexpireat": ("unix-time-milliseconds", "unix-time")}
SET_TIMES = {"EX": ("seconds", "integer"), "PX": ("milliseconds", "integer"),
             "EXAT": ("unix-time-seconds", "unix-time"),
             "PXAT": ("unix-time-milliseconds", "unix-time")}
PER_FIELD = "O(N) where N is the number of specified fields."


def later_docs():
    """Commands newer than TAG (Valkey 8.1's COMMANDLOG, 9.0's per-field
    expiry): their metadata written here in the shape of Valkey's JSON
    descriptions."""
    docs = {}
    for name, (arg, typ) in EXPIRE_TIME.items():
        docs[name] = later_command(PER_FIELD, ["RW", "UPDATE"], [
            key_arg(), {"name": arg, "type": typ},
            tokens("condition", ["NX", "XX", "GT", "LT"]), fields_block()])
    for name in ("httl", "hpttl", "hexpiretime", "hpexpiretime"):
        docs[name] = later_command(PER_FIELD, ["RO", "ACCESS"], [key_arg(), fields_block()])
    docs["hpersist"] = later_command(PER_FIELD, ["RW", "UPDATE"], [key_arg(), fields_block()])
    docs["hgetdel"] = later_command(PER_FIELD, ["RW", "ACCESS", "DELETE"],
                                    [key_arg(), fields_block()])
    docs["hgetex"] = later_command(PER_FIELD, ["RW", "ACCESS", "UPDATE"], [
        key_arg(), tokens("expiration", ["EX", "PX", "EXAT", "PXAT", "PERSIST"], SET_TIMES),
        fields_block()])
    docs["hsetex"] = later_command(PER_FIELD, ["RW", "UPDATE"], [
        key_arg(), tokens("key-condition", ["NX", "XX"]),
        tokens("field-condition", ["FNX", "FXX"]),
        tokens("expiration", ["EX", "PX", "EXAT", "PXAT", "KEEPTTL"], SET_TIMES),
        fields_block(with_values=True)])
    docs.update(commandlog_docs())
    docs.update(string_docs())
    return docs


def string_docs():
    """DELIFEQ (Valkey 9.0) and MSETEX (Valkey 9.1)."""
    def string_command(since, complexity, flags, key_specs, args):
        return {"group": "string", "since": since, "complexity": complexity,
                "command_flags": flags, "acl_categories": ["STRING"],
                "key_specs": key_specs, "arguments": args}
    pairs = {"name": "data", "type": "block", "multiple": True, "arguments": [
        key_arg(), {"name": "value", "type": "string"}]}
    msetex_keys = [{"flags": ["OW", "UPDATE"], "begin_search": {"index": {"pos": 1}},
                    "find_keys": {"keynum": {"keynumidx": 0, "firstkey": 1, "step": 2}}}]
    return {
        "delifeq": string_command("9.0.0", "O(1)", ["WRITE"], one_key(["RM", "ACCESS", "DELETE"]),
                                  [key_arg(), {"name": "value", "type": "string"}]),
        "msetex": dict(string_command(
            "9.1.0", "O(N) where N is the number of keys to set.", ["WRITE", "DENYOOM"],
            msetex_keys, [{"name": "numkeys", "type": "integer"}, pairs,
                          tokens("condition", ["NX", "XX"]),
                          tokens("expiration", ["EX", "PX", "EXAT", "PXAT", "KEEPTTL"], SET_TIMES)]),
            acl_categories=["STRING", "WRITE", "SLOW"],
            command_tips=["REQUEST_POLICY:MULTI_SHARD", "RESPONSE_POLICY:ALL_SUCCEEDED"]),
    }


def set_ifeq(desc):
    """SET's IFEQ (Valkey 8.1), a third choice of its condition."""
    for arg in desc["arguments"]:
        if arg["name"] == "condition":
            arg["arguments"].append({"name": "comparison-value", "type": "string",
                                     "token": "IFEQ", "since": "8.1.0"})
    return desc


def commandlog_docs():
    """COMMANDLOG (Valkey 8.1): its container and subcommands."""
    log_type = {"name": "type", "type": "oneof", "arguments": [
        {"name": t, "type": "pure-token", "token": t}
        for t in ("slow", "large-request", "large-reply")]}

    def sub(complexity, args, tips):
        d = {"group": "server", "since": "8.1.0", "complexity": complexity,
             "command_tips": tips}
        if args:
            d["arguments"] = args
        return d
    return {
        "commandlog": {"group": "server", "since": "8.1.0", "complexity": "Depends on subcommand."},
        "commandlog|get": sub("O(N) where N is the number of entries returned",
                              [{"name": "count", "type": "integer"}, log_type],
                              ["REQUEST_POLICY:ALL_NODES", "NONDETERMINISTIC_OUTPUT"]),
        "commandlog|len": sub("O(1)", [log_type],
                              ["REQUEST_POLICY:ALL_NODES", "RESPONSE_POLICY:AGG_SUM",
                               "NONDETERMINISTIC_OUTPUT"]),
        "commandlog|reset": sub("O(N) where N is the number of entries in the commandlog", [log_type],
                                ["REQUEST_POLICY:ALL_NODES", "RESPONSE_POLICY:ALL_SUCCEEDED"]),
        "commandlog|help": sub("O(1)", None, []),
    }


def geo_polygon_search(desc):
    """GEOSEARCH and GEOSEARCHSTORE as Valkey 9.0 describes them: the
    FROM... BY... pair of TAG becomes one choice of a oneof whose other
    choice is BYPOLYGON <num-vertices> <longitude latitude>..."""
    args = desc["arguments"]
    at = next(i for i, a in enumerate(args) if a["name"] == "from")
    vertex = [{"name": "longitude", "type": "double"}, {"name": "latitude", "type": "double"}]
    polygon = {"name": "polygon", "type": "block", "since": "9.0.0", "arguments": [
        {"token": "BYPOLYGON", "name": "num-vertices", "type": "integer"},
        {"name": "vertices", "type": "block", "multiple": True, "arguments": vertex}]}
    shape = {"name": "search-type", "type": "oneof", "arguments": [
        {"name": "radius-or-box", "type": "block", "arguments": args[at:at + 2]}, polygon]}
    return dict(desc, arguments=args[:at] + [shape] + args[at + 2:])


LATER = later_docs()
# Commands of TAG that later releases extended: their TAG description, then
# the extension.
LATER_ARGS = {"set": set_ifeq, "geosearch": geo_polygon_search,
              "geosearchstore": geo_polygon_search}


def load(git_dir, fullname):
    if fullname in LATER:
        return LATER[fullname]
    path = "%s:src/commands/%s.json" % (TAG, fullname.replace("|", "-"))
    text = subprocess.check_output(["git", "--git-dir", git_dir, "show", path])
    (_, desc), = json.loads(text).items()
    return LATER_ARGS[fullname](desc) if fullname in LATER_ARGS else desc


def c_str(s):
    return "NULL" if s is None else json.dumps(s)


def ident(fullname):
    return fullname.replace("|", "_").replace("-", "_")


class Emitter:
    def __init__(self):
        self.out = []
        self.n = 0

    def args(self, prefix, args):
        """Emits the array for args (children first); returns its name."""
        rows = []
        for a in args:
            sub, nsub = "NULL", 0
            if "arguments" in a:
                sub, nsub = self.args(prefix, a["arguments"]), len(a["arguments"])
            flags = [f for f, k in (("ARG_OPTIONAL", "optional"), ("ARG_MULTIPLE", "multiple"),
                                    ("ARG_MULTIPLE_TOKEN", "multiple_token")) if a.get(k)]
            fields = [".name = %s" % c_str(a["name"]), ".type = %s" % ARG_TYPES[a["type"]],
                      ".key_spec_index = %d" % a.get("key_spec_index", -1)]
            if a.get("display"):
                fields.append(".display = %s" % c_str(a["display"]))
            if a.get("token"):
                # Valkey shows tokens in capitals.
                fields.append(".token = %s" % c_str(a["token"].upper()))
            if a.get("since"):
                fields.append(".since = %s" % c_str(a["since"]))
            if a.get("deprecated_since"):
                fields.append(".deprecated_since = %s" % c_str(a["deprecated_since"]))
            if flags:
                fields.append(".flags = %s" % " | ".join(flags))
            if nsub:
                fields.append(".subargs = %s, .num_args = %d" % (sub, nsub))
            rows.append("    {%s}," % ", ".join(fields))
        self.n += 1
        name = "%s_args_%d" % (prefix, self.n)
        self.out.append("static const command_arg %s[] = {\n%s\n};\n" % (name, "\n".join(rows)))
        return name

    def key_specs(self, prefix, specs):
        rows = []
        for ks in specs:
            flags = " | ".join("KEY_SPEC_" + f for f in ks["flags"]) or "0"
            (bs, bsv), = ks["begin_search"].items()
            (fk, fkv), = ks["find_keys"].items()
            if bs == "index":
                begin = ".begin = KEY_BEGIN_INDEX, .bs.index = %d" % bsv["pos"]
            elif bs == "unknown":
                begin = ".begin = KEY_BEGIN_UNKNOWN"
            else:
                begin = (".begin = KEY_BEGIN_KEYWORD, .bs.keyword = {%s, %d}"
                         % (c_str(bsv["keyword"]), bsv["startfrom"]))
            if fk == "unknown":
                find = ".find = KEY_FIND_UNKNOWN"
            elif fk == "range":
                find = (".find = KEY_FIND_RANGE, .fk.range = {%d, %d, %d}"
                        % (fkv["lastkey"], fkv["step"], fkv["limit"]))
            else:
                find = (".find = KEY_FIND_KEYNUM, .fk.keynum = {%d, %d, %d}"
                        % (fkv["keynumidx"], fkv["firstkey"], fkv["step"]))
            rows.append("    {.flags = %s, %s, %s}," % (flags, begin, find))
        name = "%s_key_specs" % prefix
        self.out.append("static const key_spec %s[] = {\n%s\n};\n" % (name, "\n".join(rows)))
        return name


def main():
    git_dir = sys.argv[1]
    em = Emitter()
    entries = []
    for fullname in sorted(COMMANDS):
        d = load(git_dir, fullname)
        # A get-keys function is needed only where the key specs cannot
        # find every key (an INCOMPLETE spec, as SORT's STORE); elsewhere
        # command_find_keys reads the specs, keynum ones included.
        incomplete = any("INCOMPLETE" in ks["flags"] for ks in d.get("key_specs", []))
        if d.get("get_keys_function") and incomplete and fullname not in GETKEYS:
            sys.exit("%s: Valkey finds its keys with %s; add Keel's to GETKEYS"
                     % (fullname, d["get_keys_function"]))
        prefix = ident(fullname)
        fields = [".fullname = %s" % c_str(fullname), ".group = %s" % c_str(d["group"]),
                  ".since = %s" % c_str(d.get("since")),
                  ".complexity = %s" % c_str(d.get("complexity"))]
        cats = " | ".join("ACL_CAT_" + c for c in d.get("acl_categories", []))
        if cats:
            fields.append(".acl_categories = %s" % cats)
        extra = " | ".join(EXTRA_FLAGS[f] for f in d.get("command_flags", []) if f in EXTRA_FLAGS)
        if extra:
            fields.append(".extra_flags = %s" % extra)
        doc_flags = " | ".join("CMD_DOC_" + f for f in d.get("doc_flags", []))
        if doc_flags:
            fields.append(".doc_flags = %s" % doc_flags)
        if d.get("deprecated_since"):
            fields.append(".deprecated_since = %s" % c_str(d["deprecated_since"]))
        if d.get("replaced_by"):
            fields.append(".replaced_by = %s" % c_str(d["replaced_by"]))
        tips = d.get("command_tips", [])
        if tips:
            name = prefix + "_tips"
            em.out.append("static const char *const %s[] = {%s};\n"
                          % (name, ", ".join(c_str(t.lower()) for t in tips)))
            fields.append(".tips = %s, .num_tips = %d" % (name, len(tips)))
        if d.get("key_specs"):
            fields.append(".key_specs = %s, .num_key_specs = %d"
                          % (em.key_specs(prefix, d["key_specs"]), len(d["key_specs"])))
        if d.get("arguments"):
            fields.append(".args = %s, .num_args = %d"
                          % (em.args(prefix, d["arguments"]), len(d["arguments"])))
        if fullname in GETKEYS:
            fields.append(".get_keys = %s" % GETKEYS[fullname])
        entries.append("    {%s}," % ",\n     ".join(fields))
    print(HEADER)
    print("\n".join(em.out))
    print("/* Sorted by fullname: command_docs_lookup() searches it by bisection. */")
    print("static const command_docs docs_table[] = {\n%s\n};" % "\n".join(entries))
    print(FOOTER)


HEADER = """/* command_docs.c -- the metadata of the built-in commands that COMMAND INFO,
 * COMMAND DOCS and key extraction read: key specs, argument trees, ACL
 * categories, complexity, tips and doc flags, keyed by fullname ("get",
 * "client|list"). commands_register() attaches each entry to its command when the
 * families register, so the family tables stay small.
 *
 * Generated by core/commands/gen_command_docs.py from the facts of Valkey 8.0.1's
 * command descriptions (so clients see the same shapes); edit the script,
 * not this file. */
#include "session/command.h"

#include "common/common.h"

#include <stdlib.h>
#include <string.h>
"""

FOOTER = """
static int docs_compare(const void *key, const void *entry) {
    return strcmp(key, ((const command_docs *)entry)->fullname);
}

const command_docs *command_docs_lookup(const char *fullname) {
    return bsearch(fullname, docs_table, K_ARRAY_LEN(docs_table), sizeof(docs_table[0]),
                   docs_compare);
}"""

main()
