"""The real URLs plus small views that exercise the shared API machinery (pagination, body
parsing, the 500 envelope) before every resource endpoint exists."""

from django.urls import include, path
from rest_framework import serializers
from rest_framework.response import Response
from rest_framework.views import APIView

from apps.api.pagination import PagePagination
from apps.users.models import User


class UserRowSerializer(serializers.Serializer):
    id = serializers.IntegerField()


class ScopedView(APIView):
    required_scope = "write:posts"

    def get(self, request):
        return Response({"data": {"ok": True}})


class PagedView(APIView):
    required_scope = None

    def get(self, request):
        paginator = PagePagination()
        page = paginator.paginate_queryset(User.objects.order_by("id"), request, view=self)
        return paginator.get_paginated_response(UserRowSerializer(page, many=True).data)


class TitleSerializer(serializers.Serializer):
    title = serializers.CharField(max_length=10)


class EchoView(APIView):
    required_scope = None

    def post(self, request):
        serializer = TitleSerializer(data=request.data)
        serializer.is_valid(raise_exception=True)
        return Response({"data": serializer.validated_data})


class BoomView(APIView):
    required_scope = None

    def get(self, request):
        raise RuntimeError("secret internals: password=hunter2")


urlpatterns = [
    path("v1/_test/scoped", ScopedView.as_view()),
    path("v1/_test/paged", PagedView.as_view()),
    path("v1/_test/echo", EchoView.as_view()),
    path("v1/_test/boom", BoomView.as_view()),
    path("", include("config.urls")),
]
handler400 = "apps.api.errors.bad_request"
handler404 = "apps.api.errors.page_not_found"
handler500 = "apps.api.errors.server_error"
