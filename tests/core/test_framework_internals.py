"""The private parts and undocumented internals of Django, DRF and the other libraries that the
service's code relies on, each held to the exact shape the code reads, and run through the code that
reads it. A library upgrade that changes one fails here, by the name of the file that uses it and
what to redo, before it fails in production. docs/architecture.md ("Framework internals we rely on")
says why each is kept."""

import ast
import copy
import inspect
import logging
import re
import shutil
import smtplib
import subprocess
import textwrap
import time
import uuid
from datetime import UTC, datetime
from pathlib import Path
from types import SimpleNamespace
from urllib.parse import urlencode

import axes.backends
import granian.log
import granian.server.common
import honcho.manager
import psycopg
import pytest
from axes.exceptions import AxesBackendPermissionDenied
from axes.handlers.cache import AxesCacheHandler
from axes.helpers import get_client_cache_keys, get_client_username
from django import forms
from django.conf import settings
from django.contrib.admin.templatetags.admin_urls import add_preserved_filters
from django.contrib.admin.utils import get_fields_from_path, quote, unquote
from django.core.cache.backends.locmem import LocMemCache
from django.core.mail.backends.smtp import EmailBackend as SmtpBackend
from django.core.mail.message import BadHeaderError, forbid_multi_line_headers, sanitize_address
from django.db import DEFAULT_DB_ALIAS, connection, models, transaction
from django.db.models import F
from django.db.models.query import get_related_populators
from django.forms.fields import InvalidJSONInput, JSONString
from django.forms.models import BaseModelForm
from django.http import HttpResponse
from django.http.request import split_domain_port, validate_host
from django.template.utils import get_app_template_dirs
from django.urls import reverse
from django.utils.cache import get_conditional_response, set_response_etag
from django.utils.log import log_response
from drf_spectacular.generators import SchemaGenerator
from drf_spectacular.openapi import AutoSchema
from kombu import Connection
from rest_framework import serializers
from rest_framework.request import Request
from rest_framework.views import set_rollback
from urllib3.connection import HTTPConnection, HTTPSConnection

from apps.accounts.models import Account
from apps.api.ratelimit import CounterStore
from apps.blog.pages import template_files
from apps.channels.models import Channel
from apps.core.addresses import GuardedHTTPSConnection, GuardedHTTPSPool, pool_manager
from apps.core.fields import JSONFormField
from apps.core.hosts import AllowedHosts
from apps.core.prepared import PreparedLookup
from apps.core.serializers import ResponseSerializer, UtcDateTimeField, fields_of
from apps.posts.models import Post
from apps.publishing.newsletter.sending import _dropped
from apps.settings_area.site import _cascades_to
from apps.users.api import UserCreateSerializer
from apps.users.models import ApiKey, User
from apps.users.sign_in_limits import LoginFailureCounters, LoginThrottleBackend
from apps.webhooks.models import Delivery, Event
from config.server import process
from config.storage import StaticFilesStorage
from tests.conftest import admin_session, requires_postgres
from tests.factories import ApiKeyFactory, ChannelFactory, OperatorFactory
from tests.posts.test_post_admin import form_data
from tests.publishing.newsletter.smtp_server import SmtpServer

pytestmark = pytest.mark.django_db


def redo(where: str, what: str) -> str:
    """The failure message: which file leans on the internal, and what the upgrade asks of it."""
    return f"{where} relies on this library internal, which has changed: {what}"


# --- Django's SQL compiler: apps/core/prepared.py --------------------------------------------------

PREPARED = "apps/core/prepared.py (PreparedLookup._compile and .first)"


def key_with_related(prefix):
    # Related objects, an annotation and converted columns (JSON; datetimes on SQLite): every part of
    # the compiler's output that PreparedLookup reads.
    return (
        ApiKey.objects.select_related("account", "user")
        .annotate(account_name=F("account__name"))
        .filter(prefix=prefix)
        .order_by()[:1]
    )


def test_the_sql_compiler_exposes_the_columns_related_objects_and_converters_a_prepared_lookup_reads():
    compiler = key_with_related("00000000").query.get_compiler(using=DEFAULT_DB_ALIAS)
    compiler.as_sql()
    select, klass_info = compiler.select, compiler.klass_info
    assert isinstance(klass_info, dict) and {"model", "select_fields", "related_klass_infos"} <= klass_info.keys(), (
        redo(PREPARED, "find the model's columns and its related objects in the compiler's new klass_info")
    )
    assert klass_info["model"] is ApiKey
    fields = klass_info["select_fields"]
    assert fields == list(range(fields[0], fields[-1] + 1)), redo(PREPARED, "the model's columns are no longer one run")
    own = [column[0].target.attname for column in select[fields[0] : fields[-1] + 1]]
    assert own == [field.attname for field in ApiKey._meta.concrete_fields], redo(
        PREPARED, "compiler.select's entries are no longer (column, sql, alias) with column.target"
    )
    assert compiler.col_count == len(select), redo(PREPARED, "col_count no longer counts every selected column")
    assert set(compiler.annotation_col_map) == {"account_name"}, redo(PREPARED, "annotation_col_map changed")
    assert compiler.annotation_col_map["account_name"] not in fields
    converters = compiler.get_converters([column[0] for column in select[: compiler.col_count]])
    scopes_at = fields[0] + own.index("scopes")  # a JSON column: converted on every backend
    functions, expression = converters[scopes_at]
    assert functions and all(map(callable, functions)) and expression is select[scopes_at][0], redo(
        PREPARED, "get_converters no longer answers {position: (converters, expression)}"
    )
    populators = get_related_populators(klass_info, select, DEFAULT_DB_ALIAS)
    assert {populator.model_cls for populator in populators} == {Account, User}, redo(
        PREPARED, "get_related_populators no longer gives one populator per select_related model"
    )
    assert all(callable(populator.populate) for populator in populators)


def test_a_prepared_lookup_with_related_objects_and_an_annotation_builds_what_the_orm_builds(
    django_assert_num_queries,
):
    lookup = PreparedLookup(ApiKey, "prefix", ("00000000", "11111111"), key_with_related)
    ApiKeyFactory()
    key = ApiKeyFactory(scopes=["read:posts"])
    expected = key_with_related(key.prefix).get()
    with django_assert_num_queries(1):
        found = lookup.first(key.prefix)
        related = (found.account.name, found.user.email, found.account_name)
    assert related == (expected.account.name, expected.user.email, expected.account.name), redo(
        PREPARED, "the related objects or the annotation are no longer where the compiler said"
    )
    for field in ApiKey._meta.concrete_fields:
        assert getattr(found, field.attname) == getattr(expected, field.attname), redo(PREPARED, field.name)
    assert found.scopes == ["read:posts"] and found.expires_at.tzinfo is not None


def test_the_backends_integer_ranges_are_the_bounds_a_prepared_lookup_checks_a_value_against():
    for internal_type in ("AutoField", "BigAutoField", "IntegerField", "BigIntegerField", "SmallIntegerField"):
        low, high = connection.ops.integer_field_range(internal_type)
        assert isinstance(low, int) and isinstance(high, int) and low < 0 < high, redo(
            PREPARED, f"connection.ops.integer_field_range({internal_type!r}) is no longer an int pair"
        )
    assert connection.ops.integer_field_range("BigAutoField") == (-(2**63), 2**63 - 1)


def test_concrete_fields_are_the_models_own_columns_in_the_order_from_db_takes_them(django_assert_num_queries):
    where = "apps/core/coherence.py (Columns), apps/webhooks/outbox.py, apps/channels/models.py, rotate_credentials.py"
    for model in (ApiKey, Account, User, Channel, Post):
        columns = [field.attname for field in model._meta.get_fields() if field.concrete and not field.many_to_many]
        assert [field.attname for field in model._meta.concrete_fields] == columns, redo(
            where, f"{model.__name__}._meta.concrete_fields is no longer every column, in order"
        )
    key = ApiKeyFactory()
    names = tuple(field.attname for field in ApiKey._meta.concrete_fields)
    with django_assert_num_queries(0):
        built = ApiKey.from_db(DEFAULT_DB_ALIAS, names, tuple(getattr(key, name) for name in names))
    assert [getattr(built, name) for name in names] == [getattr(key, name) for name in names]
    assert not built._state.adding


def test_options_fields_are_the_forward_columns_and_related_objects_the_relations_pointing_back():
    for model in (ApiKey, Account, User, Channel, Post):
        forward = [field for field in model._meta.get_fields() if field.concrete and not field.many_to_many]
        assert list(model._meta.fields) == forward, redo(
            "apps/posts/lifecycle.py (validate_fields), apps/users/services.py",
            f"{model.__name__}._meta.fields is no longer the model's forward columns",
        )
        back = [field for field in model._meta.get_fields() if field.auto_created and not field.concrete]
        assert list(model._meta.related_objects) == back, redo(
            "apps/settings_area/site.py (_cascades_to)",
            f"{model.__name__}._meta.related_objects is no longer every relation pointing to the model",
        )
    assert "fields" in models.Model.clean_fields.__code__.co_names, redo(
        "apps/posts/lifecycle.py (validate_fields)", "full_clean no longer checks _meta.fields"
    )
    assert Post in _cascades_to(Channel), redo("apps/settings_area/site.py (_cascades_to)", "a channel's posts")


# --- DRF's serializer internals: apps/core/serializers.py, request fields ----------------------------

SERIALIZERS = "apps/core/serializers.py (_plan, ResponseSerializer._own_renderers)"


class Part(ResponseSerializer):
    id = serializers.IntegerField()
    name = serializers.CharField()


class Sample(ResponseSerializer):
    title = serializers.CharField()
    count = serializers.IntegerField()
    password = serializers.CharField(write_only=True)
    parts = Part(many=True)
    when = UtcDateTimeField()


def test_a_response_serializer_renders_what_drfs_own_rendering_makes():
    item = SimpleNamespace(
        title="T",
        count=3,
        password="never shown",
        parts=[SimpleNamespace(id=1, name="a")],
        when=datetime(2024, 1, 2, 3, 4, 5, tzinfo=UTC),
    )
    assert Sample(item).data == serializers.Serializer.to_representation(Sample(), item), redo(
        SERIALIZERS, "render the plan from DRF's new field machinery"
    )
    assert Sample(SimpleNamespace(**{**vars(item), "title": None})).data["title"] is None


def test_the_fields_of_a_form_are_drfs_public_fields_made_once_in_declaration_order():
    class Child(Part):
        extra = serializers.CharField()

    assert list(fields_of(Child)) == ["id", "name", "extra"]
    assert fields_of(Child) is fields_of(Child)


def test_a_deep_copy_of_a_bound_field_is_a_new_unbound_field():
    field = copy.deepcopy(fields_of(Sample)["parts"])
    assert field.parent is None, redo(SERIALIZERS, "a deep copy keeps its binding: make a fresh field")
    field.bind("parts", Sample())
    assert field.field_name == "parts", redo(SERIALIZERS, "bind a fresh field for a stateful nested form")


def test_a_drf_request_holds_the_django_request_it_wraps(rf):
    http_request = rf.get("/v1/me")
    assert Request(http_request)._request is http_request, redo(
        "apps/users/authentication.py", "find the wrapped HttpRequest (the rate-limit budget is set on it)"
    )


def test_the_budget_charged_while_authenticating_reaches_the_middleware_that_writes_the_headers(authed):
    response = authed.get("/v1/me")
    assert response.status_code == 200
    assert "X-RateLimit-Limit" in response.headers, redo(
        "apps/users/authentication.py", "request._request is no longer the request the middleware sees"
    )


def test_set_rollback_marks_an_atomic_request_for_rollback(monkeypatch):
    monkeypatch.setitem(connection.settings_dict, "ATOMIC_REQUESTS", True)
    with transaction.atomic():
        set_rollback()
        marked = connection.needs_rollback
        connection.set_rollback(False)
    assert marked, redo("apps/api/errors.py (exception_handler)", "rest_framework.views.set_rollback changed")


def test_spectacular_maps_a_strict_serializer_through_its_basic_mapping():
    where = "apps/api/schema.py (StrictSerializerScheme.map_serializer)"
    assert list(inspect.signature(AutoSchema._map_basic_serializer).parameters) == [
        "self",
        "serializer",
        "direction",
    ], redo(where, "AutoSchema._map_basic_serializer's arguments changed")
    component = SchemaGenerator().get_schema(request=None, public=True)["components"]["schemas"]["UserCreateRequest"]
    assert component["additionalProperties"] is False, redo(where, "the extension is no longer applied")
    assert list(component["properties"]) == list(UserCreateSerializer().fields)
    assert component["required"] == ["email", "name"]


# --- Django's local-memory cache: apps/users/sign_in_limits.py (LoginFailureCounters.seconds_left) ---------


def test_the_local_memory_cache_keeps_each_keys_expiry_where_seconds_left_looks():
    backend = LocMemCache(f"internals-{uuid.uuid4().hex}", {})
    backend.set("key", 1, 30)
    expiry = backend._expire_info.get(backend.make_and_validate_key("key"))
    assert isinstance(expiry, float) and 0 < expiry - time.time() <= 30, redo(
        "apps/users/sign_in_limits.py (LoginFailureCounters.seconds_left)", "LocMemCache._expire_info changed"
    )


def test_a_counters_seconds_left_are_read_from_the_cache_that_holds_it():
    counters = LoginFailureCounters(CounterStore(namespace=f"test-internals-{uuid.uuid4().hex}"))
    counters.add("key", 1, 30)
    left = counters.seconds_left("key")
    assert left is not None and 0 < left <= 30, redo(
        "apps/users/sign_in_limits.py (LoginFailureCounters.seconds_left)",
        "a counter's expiry is no longer in Redis's TTL or LocMemCache._expire_info",
    )


# --- Django's admin: apps/core/admin.py, apps/posts/admin.py, apps/users/admin.py ----------------


def test_a_post_saved_in_the_admin_with_an_empty_slug_gets_one_from_its_title(admin_client):
    where = "apps/posts/admin.py (PostForm._get_validation_exclusions)"
    assert "_get_validation_exclusions" in BaseModelForm._post_clean.__code__.co_names, redo(
        where, "ModelForm validation no longer asks _get_validation_exclusions"
    )
    channel = ChannelFactory()
    response = admin_client.post("/admin/posts/post/add/", form_data(channel=channel.pk, title="From Title", slug=""))
    assert response.status_code == 302, redo(where, "the model's own check refused the empty slug")
    assert Post.objects.get(channel=channel).slug == "from-title"


def test_a_button_pressed_on_a_row_that_is_gone_returns_to_the_index_with_djangos_warning():
    response = admin_session(OperatorFactory()).post("/admin/publishing/publicationjob/999999/retry/", follow=True)
    where = "apps/core/admin.py (ObjectButtonsAdmin), linkedin/admin.py, newsletter/admin_views.py"
    assert response.redirect_chain == [(reverse("admin:index"), 302)], redo(
        where, "ModelAdmin._get_obj_does_not_exist_redirect changed"
    )
    [message] = [str(message) for message in response.context["messages"]]
    assert "with ID \u201c999999\u201d doesn\u2019t exist" in message  # Django's own words


def test_a_list_refuses_a_lookup_none_of_its_filters_makes(admin_client):
    where = "apps/core/admin_scoping.py (OwnFiltersChangeList.get_filters)"
    response = admin_client.get("/admin/users/user/")
    assert response.status_code == 200
    found = response.context["cl"].get_filters(response.wsgi_request)
    assert len(found) == 5 and isinstance(found[2], dict), redo(
        where, "ChangeList.get_filters no longer answers the remaining lookups third"
    )
    refused = admin_client.get("/admin/users/user/", {"password__startswith": "pbkdf2"})
    assert refused.status_code == 400, redo(where, "a lookup no filter offers is listed again")


def test_the_admin_helpers_quote_ids_find_fields_and_keep_the_lists_filters():
    where = "apps/core/admin.py, apps/users/admin.py (django.contrib.admin's undocumented helpers)"
    assert (quote("a/b_c"), unquote("a_2Fb_5Fc")) == ("a_2Fb_5Fc", "a/b_c"), redo(where, "quote/unquote changed")
    assert get_fields_from_path(Post, "channel__account")[-1].related_model is Account, redo(where, "fields path")
    context = {"preserved_filters": urlencode({"_changelist_filters": "q=x"}), "opts": ApiKey._meta}
    assert add_preserved_filters(context, "/admin/accounts/apikey/") == "/admin/accounts/apikey/?q=x", redo(
        where, "add_preserved_filters no longer restores the list's filters"
    )


# --- Django's undocumented helpers, imported by name --------------------------------------------------


def test_the_host_helpers_split_and_match_a_host_as_djangos_own_check_does():
    where = "apps/blog/middleware.py (BlogDomainMiddleware)"
    assert split_domain_port("Blog.Example.COM:8000") == ("blog.example.com", "8000"), redo(where, "split changed")
    assert split_domain_port("[::1]:80") == ("[::1]", "80")
    assert split_domain_port("bad host!") == ("", ""), redo(where, "an invalid host no longer splits to nothing")
    assert validate_host("blog.example.com", [".example.com"])
    assert not validate_host("example.org", AllowedHosts(["example.com"])), redo(where, "validate_host changed")


def test_the_etag_helpers_answer_a_matching_if_none_match_with_304(rf):
    where = "apps/api/representations.py, apps/blog/pages.py"
    response = HttpResponse(b'{"a":1}')
    set_response_etag(response)
    assert re.fullmatch(r'"[0-9a-f]{32}"', response["ETag"]), redo(where, "set_response_etag's ETag changed")
    request = rf.get("/", HTTP_IF_NONE_MATCH=response["ETag"])
    answer = get_conditional_response(request, etag=response["ETag"], last_modified=None, response=response)
    assert answer.status_code == 304, redo(where, "get_conditional_response changed")
    assert get_conditional_response(rf.get("/"), etag=response["ETag"], response=response) is response


def test_log_response_writes_djangos_request_warning_once_per_response(rf):
    records: list[logging.LogRecord] = []
    handler = logging.Handler()
    handler.emit = records.append
    logger = logging.getLogger("django.request")
    logger.addHandler(handler)
    try:
        request, response = rf.get("/v1/nothing"), HttpResponse(status=404)
        for _ in range(2):  # the middleware's call, then Django's handler's own
            log_response("%s: %s", response.reason_phrase, request.path, response=response, request=request)
    finally:
        logger.removeHandler(handler)
    assert [(r.levelname, r.getMessage(), r.status_code) for r in records] == [
        ("WARNING", "Not Found: /v1/nothing", 404)
    ], redo("apps/api/observability.py (RequestLogMiddleware.handle)", "log_response logs again, or differently")


def test_the_app_template_folders_include_the_blogs_default_theme():
    folders = [Path(folder) for folder in get_app_template_dirs("templates")]
    assert Path(settings.BASE_DIR, "apps", "blog", "templates") in folders, redo(
        "apps/blog/pages.py (template_files)", "get_app_template_dirs changed: the pages' digest misses templates"
    )
    assert Path(settings.BASE_DIR, "apps", "blog", "templates", "blog", "post.html") in template_files()


def test_djangos_json_form_markers_still_steer_its_json_field():
    where = "apps/core/fields.py (JSONFormField)"
    assert forms.JSONField().prepare_value(InvalidJSONInput("{not json")) == "{not json", redo(
        where, "InvalidJSONInput no longer shows the typed text again"
    )
    text = JSONString("plain")
    assert forms.JSONField().to_python(text) is text, redo(where, "JSONString is decoded a second time")
    assert isinstance(JSONFormField().clean('"plain"'), JSONString)
    assert isinstance(JSONFormField().bound_data("{not json", None), InvalidJSONInput)


def test_the_mail_address_helpers_encode_as_the_mail_api_does():
    where = "apps/publishing/newsletter/message.py (Prepared; tests/publishing/newsletter/test_message.py)"
    assert sanitize_address(("Zoë", "zoe@example.com"), "utf-8") == "=?utf-8?q?Zo=C3=AB?= <zoe@example.com>", redo(
        where, "sanitize_address changed (Django 6.0 reworks django.core.mail)"
    )
    assert forbid_multi_line_headers("To", "Zoë <zoe@example.com>", "utf-8") == (
        "To",
        "=?utf-8?q?Zo=C3=AB?= <zoe@example.com>",
    ), redo(where, "forbid_multi_line_headers changed")
    with pytest.raises(BadHeaderError):
        forbid_multi_line_headers("To", "a@example.com\nBcc: b@example.com", "utf-8")


# --- django-axes: apps/users/sign_in_limits.py (LoginFailureHandler, LoginThrottleBackend) ------------------

AXES = "apps/users/sign_in_limits.py (LoginFailureHandler, LoginFailureCounters)"


def test_axes_cache_handler_asks_its_cache_only_what_login_failure_counters_answer():
    tree = ast.parse(textwrap.dedent(inspect.getsource(AxesCacheHandler)))
    calls = [
        node
        for node in ast.walk(tree)
        if isinstance(node, ast.Call)
        and isinstance(node.func, ast.Attribute)
        and isinstance(node.func.value, ast.Attribute)
        and node.func.value.attr == "cache"
    ]
    assert calls, redo(AXES, "axes' handler no longer counts through self.cache")
    for call in calls:
        method = getattr(LoginFailureCounters, call.func.attr, None)
        assert method is not None, redo(AXES, f"LoginFailureCounters needs {call.func.attr}()")
        inspect.signature(method).bind(None, *call.args, **{keyword.arg: None for keyword in call.keywords})
    init = ast.parse(textwrap.dedent(inspect.getsource(AxesCacheHandler.__init__)))
    assigned = {target.attr for node in ast.walk(init) if isinstance(node, ast.Assign) for target in node.targets}
    assert assigned == {"cache"}, redo(AXES, "AxesCacheHandler.__init__ (which ours skips) sets more than the cache")


def test_axes_backend_marks_the_attempt_it_refused_unchecked(rf, monkeypatch):
    monkeypatch.setattr(axes.backends.AxesProxyHandler, "is_allowed", lambda request, credentials=None: False)
    request = rf.post("/admin/login/", REMOTE_ADDR="203.0.113.5")
    with pytest.raises(AxesBackendPermissionDenied):
        LoginThrottleBackend().authenticate(request, username="someone@example.com", password="secret")
    assert getattr(request, "axes_locked_out", False) is True, redo(
        AXES, "axes' backend no longer marks a refused attempt with request.axes_locked_out"
    )


def test_axes_helpers_name_the_sign_in_and_key_its_address(rf):
    request = rf.post("/admin/login/", {"username": "typed@example.com"}, REMOTE_ADDR="203.0.113.5")
    assert get_client_username(request, {"username": "Given@Example.com"}) == "Given@Example.com", redo(
        AXES, "get_client_username no longer reads the credentials first"
    )
    assert get_client_username(request) == "typed@example.com"
    keys = get_client_cache_keys(request, None)
    other = get_client_cache_keys(rf.post("/admin/login/", REMOTE_ADDR="203.0.113.6"), None)
    assert len(keys) == len(settings.AXES_LOCKOUT_PARAMETERS) and all(isinstance(k, str) for k in keys), redo(
        AXES, "get_client_cache_keys no longer answers one key per lockout parameter"
    )
    assert keys != other


# --- urllib3: apps/core/addresses.py -------------------------------------------------------------------


def test_urllib3_opens_every_connection_through_the_step_the_address_guard_replaces():
    where = "apps/core/addresses.py (_GuardedMixin; behaviour in tests/webhooks/test_guard.py)"
    for cls in (HTTPConnection, HTTPSConnection):
        assert "_new_conn" in cls.connect.__code__.co_names, redo(where, f"{cls.__name__}.connect skips _new_conn")
    assert GuardedHTTPSConnection("blog.example.com", 443)._dns_host == "blog.example.com", redo(
        where, "HTTPConnection._dns_host is gone: resolve the host from its new name"
    )
    assert type(pool_manager().connection_from_url("https://example.com/")) is GuardedHTTPSPool, redo(
        where, "PoolManager.pool_classes_by_scheme is no longer read: the guard is bypassed"
    )


# --- kombu: config/broker.py ---------------------------------------------------------------------------


def test_kombu_publishes_through_the_filesystem_channels_put(tmp_path):
    folders = {name: tmp_path / name for name in ("queue", "processed", "control")}
    for folder in folders.values():
        folder.mkdir()
    options = {
        "data_folder_in": str(folders["queue"]),
        "data_folder_out": str(folders["queue"]),
        "processed_folder": str(folders["processed"]),
        "control_folder": str(folders["control"]),
        "store_processed": False,
    }
    with Connection("filesystem://", transport="config.broker:Transport", transport_options=options) as broker:
        queue = broker.SimpleQueue("internals")
        queue.put({"n": 1})
        names = [path.name for path in folders["queue"].iterdir()]
        assert len(names) == 1 and re.fullmatch(r"\d{20}_[0-9a-f-]{36}\.internals\.msg", names[0]), redo(
            "config/broker.py (Channel._put; tests/ops/test_embedded_broker.py)", "kombu no longer writes through _put"
        )
        assert queue.get(timeout=1).payload == {"n": 1}
        queue.close()


def test_kombu_takes_a_connections_missing_host_from_the_transports_default_connection_params(caplog):
    where = "config/broker.py (Transport.default_connection_params)"
    with caplog.at_level(logging.WARNING, logger="kombu.connection"):
        info = Connection("filesystem://", transport="config.broker:Transport").info()
        assert info["hostname"] is None, redo(where, "kombu fills a missing host from elsewhere")
        assert caplog.records == [], redo(where, "kombu warns of a missing host another way")
        Connection("filesystem://", transport="kombu.transport.filesystem:Transport").info()
    assert "No hostname was supplied" in caplog.text, redo(where, "kombu's own warning is gone: the override may go")


# --- granian: config/server/process.py -------------------------------------------------------------------


def test_granian_warns_of_more_workers_than_cores_in_the_words_the_web_process_filters():
    source = inspect.getsource(granian.server.common)
    assert f"'{process.MORE_WORKERS_THAN_CORES}" in source, redo(
        "config/server/process.py (MORE_WORKERS_THAN_CORES, WorkersAsMeasured)", "granian words its warning otherwise"
    )


def test_granian_merges_the_web_processs_logging_over_its_own_at_the_top_level(monkeypatch):
    captured: dict = {}
    monkeypatch.setattr(granian.log.logging.config, "dictConfig", captured.update)
    granian.log.configure_logging(granian.log.LogLevels.info, process.logging_config(3))
    where = "config/server/process.py (LOGGING, logging_config)"
    assert captured["formatters"] == process.LOGGING["formatters"], redo(
        where, "granian merges log_dictconfig otherwise"
    )
    assert {handler["formatter"] for handler in captured["handlers"].values()} == set(process.LOGGING["formatters"]), (
        redo(where, "granian's handlers name formatters that LOGGING does not replace")
    )
    assert {"_granian", "granian.access"} <= set(captured["loggers"])
    assert captured["loggers"]["_granian"]["handlers"] == ["console"], redo(where, "the workers filter is not on")
    assert captured["handlers"]["console"]["filters"] == ["workers"]


# --- whitenoise / Django's manifest storage: config/storage.py -------------------------------------------


def test_a_static_file_the_manifest_does_not_list_keeps_its_plain_name(tmp_path):
    storage = StaticFilesStorage(location=tmp_path, base_url="/static/")
    assert storage.stored_name("blog/missing.css") == "blog/missing.css"
    assert storage.url("blog/missing.css") == "/static/blog/missing.css", redo(
        "config/storage.py (StaticFilesStorage.stored_name)", "url() no longer goes through stored_name"
    )


# --- Django's connection and psycopg: apps/core/coherence.py, apps/webhooks/outbox.py ------------------


@requires_postgres
@pytest.mark.django_db(transaction=True)
def test_a_sessions_own_notification_reaches_its_handler_before_its_commit_returns():
    where = "apps/core/coherence.py (listen, _notified)"
    connection.ensure_connection()
    raw = connection.connection
    assert isinstance(raw, psycopg.Connection), redo(where, "DatabaseWrapper.connection is no longer psycopg's")
    channel = f"cps_internals_{raw.info.backend_pid}"
    received: list = []
    with connection.cursor() as cursor:
        cursor.execute(f"LISTEN {channel}")
    raw.add_notify_handler(received.append)
    try:
        with transaction.atomic():
            with connection.cursor() as cursor:
                cursor.execute("SELECT pg_notify(%s, %s)", [channel, "c:1"])
            before_commit = list(received)
        # Nothing else runs on the connection: the COMMIT's own answer carried the notification.
        after_commit = [(notify.channel, notify.payload) for notify in received]
    finally:
        raw.remove_notify_handler(received.append)
        with connection.cursor() as cursor:
            cursor.execute(f"UNLISTEN {channel}")
    assert before_commit == []
    assert after_commit == [(channel, "c:1")], redo(where, "notifications no longer arrive with the COMMIT")


@requires_postgres
def test_djangos_cursor_hands_over_psycopgs_copy_and_says_which_keys_the_database_numbers():
    where = "apps/webhooks/outbox.py (insert_rows; behaviour in tests/webhooks/test_bulk_emit.py)"
    assert (Event._meta.pk.db_returning, Delivery._meta.pk.db_returning) == (True, False), redo(
        where, "Field.db_returning changed: the COPY path must take the sequence's numbers another way"
    )
    with connection.cursor() as cursor:
        assert callable(cursor.copy), redo(where, "Django's CursorWrapper no longer passes copy() through")


# --- Django's SMTP backend and smtplib: apps/publishing/newsletter/sending.py ------------------------------


def test_the_smtp_backend_keeps_its_smtplib_connection_whose_socket_is_none_once_closed():
    where = "apps/publishing/newsletter/sending.py (_dropped, _close, Sender._send_one)"
    with SmtpServer() as server:
        backend = SmtpBackend(host=server.host, port=server.port, use_tls=False, timeout=5)
        assert backend.connection is None, redo(where, "a closed backend's `connection` is no longer None")
        backend.open()
        try:
            assert isinstance(backend.connection, smtplib.SMTP), redo(where, "`connection` is not smtplib's")
            assert backend.connection.sock is not None and not _dropped(backend)
            backend.connection.sendmail("from@example.com", ["to@example.com"], b"Subject: internals\r\n\r\nhi\r\n")
            backend.connection.close()
            assert backend.connection.sock is None and _dropped(backend), redo(
                where, "smtplib no longer empties SMTP.sock when the connection closes"
            )
        finally:
            backend.connection = None
    assert server.count_by_address()["to@example.com"] == 1, redo(where, "sendmail on `connection` sent nothing")


# --- honcho: the Makefile's `make run` ------------------------------------------------------------------


@pytest.mark.skipif(shutil.which("make") is None, reason="needs make")
def test_make_run_gives_its_processes_its_own_wait_before_honcho_kills_them(tmp_path):
    where = "Makefile (HONCHO, STOP_WAIT)"
    assert "KILL_WAIT" in honcho.manager.Manager.loop.__code__.co_names, redo(
        where, "honcho.manager.KILL_WAIT is no longer read when stopping: find the new way to set the wait"
    )
    # `stubborn` ignores SIGTERM and would end by itself in 3 s: only honcho's SIGKILL after the
    # Makefile's wait (0 s here) ends it sooner. honcho's own 5 s would let it end by itself.
    ready = tmp_path / "ready"  # honcho runs the processes in make's folder: every path is absolute
    (tmp_path / "Procfile").write_text(
        f"quick: while [ ! -e {ready} ]; do sleep 0.05; done\n"
        f"stubborn: trap '' TERM; touch {ready}; sleep 3; echo ended by itself\n"
    )
    target = f"internals-honcho: ; $(HONCHO) -f {tmp_path}/Procfile -d {tmp_path} start"
    result = subprocess.run(
        ["make", "-s", "STOP_WAIT=0", f"--eval={target}", "internals-honcho"],
        cwd=settings.BASE_DIR,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert "stubborn.1 stopped (rc=-9)" in result.stdout, redo(where, f"the wait was not honcho's: {result.stdout}")
    assert "ended by itself" not in result.stdout


@requires_postgres
@pytest.mark.django_db
def test_djangos_cursor_keeps_a_timestamptz_loader_whose_timezone_is_the_connections():
    from django.db import connection, connections
    from psycopg.pq import Format

    from apps.core import dates

    where = "apps/core/dates.py (UtcTimestamptzLoader)"
    oid = psycopg.adapters.types["timestamptz"].oid
    # Django's own rule, read in its source: a cursor gets Django's loader only where the
    # connection's loader's `timezone` differs from the connection's.
    source = inspect.getsource(type(connections["default"]).create_cursor)
    assert "tzloader.timezone" in source and "register_tzloader" in source, redo(
        where, "Django's create_cursor no longer compares the loader's timezone: find how it picks its loader now"
    )
    with connection.cursor() as cursor:
        loader = cursor.cursor.adapters.get_loader(oid, Format.TEXT)
    assert loader is dates.UtcTimestamptzLoader, redo(where, f"a cursor reads dates with {loader!r}")
    # psycopg's compiled loader, whose bound `load` each instance calls, reads a date.
    assert dates.COMPILED(oid, None).load(b"2026-11-29 04:00:00.5+00") == datetime(2026, 11, 29, 4, 0, 0, 500000, UTC)
