"""The subscribe form of a newsletter's public page (templates/blog/subscribe_form.html)."""

from django import forms

# The honeypot: a field people never see (visually hidden, out of the tab order, not filled in by
# the browser), which form-filling bots fill in like any other.
HONEYPOT = "website"


class SubscribeForm(forms.Form):
    # Django's fields refuse NUL characters and over-long values, which the database would refuse
    # with an error instead.
    email = forms.EmailField(max_length=254, error_messages={"invalid": "Enter a valid e-mail address."})
    name = forms.CharField(max_length=200, required=False)
    website = forms.CharField(required=False)

    def is_bot(self) -> bool:
        return bool(self.data.get(HONEYPOT))
