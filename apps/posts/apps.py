from django.apps import AppConfig


class PostsConfig(AppConfig):
    name = "apps.posts"
    label = "posts"

    def ready(self) -> None:
        # The publishing pipeline publishes posts through this (it does not import the posts app).
        from apps.core.destinations import register_subject
        from apps.posts.pipeline_subject import PostSubject

        register_subject(PostSubject())
        # The media library keeps what a live post shows (it does not import the posts app either).
        from apps.media.services import register_usage
        from apps.posts.selectors import posts_showing

        register_usage(posts_showing)
