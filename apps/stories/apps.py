from django.apps import AppConfig


class StoriesConfig(AppConfig):
    name = "apps.stories"
    label = "stories"
    verbose_name = "Stories"

    def ready(self) -> None:
        # The posts app tells what may have moved a post's publication on (it does not import this
        # app, which sits above it): a story's state is its posts' states.
        from apps.posts.outcomes import listen
        from apps.stories.announcements import stories_refresh

        listen(stories_refresh)
