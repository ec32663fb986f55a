from django.apps import AppConfig


class PostsConfig(AppConfig):
    name = "apps.posts"
    label = "posts"

    def ready(self) -> None:
        # The publishing pipeline publishes posts through this (it does not import the posts app).
        from apps.core.destinations import register_subject
        from apps.posts.pipeline_subject import PostSubject

        register_subject(PostSubject())
