'use strict';
// "Copy" buttons: <button data-copy-target="ID"> copies the text of the element with that id.
// A file of its own, as the admin's Content-Security-Policy runs no inline script.
{
    function select(element) {
        const range = document.createRange();
        range.selectNodeContents(element);
        const selection = window.getSelection();
        selection.removeAllRanges();
        selection.addRange(range);
    }

    function done(button, label) {
        const original = button.dataset.label || button.textContent;
        button.dataset.label = original;
        button.textContent = label;
        setTimeout(() => { button.textContent = original; }, 2000);
    }

    // Delegated, so it works whether this script runs before or after the button is parsed.
    document.addEventListener('click', (event) => {
        const button = event.target.closest('[data-copy-target]');
        if (!button) {
            return;
        }
        const element = document.getElementById(button.dataset.copyTarget);
        if (!element) {
            return;
        }
        // The clipboard API exists only on secure pages (https, localhost) and may be refused;
        // then the text is left selected for the user to copy.
        const fallBack = () => { select(element); done(button, 'Press Ctrl+C'); };
        if (!navigator.clipboard) {
            fallBack();
            return;
        }
        navigator.clipboard.writeText(element.textContent).then(() => done(button, 'Copied'), fallBack);
    });
}
