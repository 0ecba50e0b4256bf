// Home page: accept or decline a workspace invitation through the API, then show the result.
(function () {
  "use strict";
  const G = window.Groundwork;
  const box = document.querySelector("[data-invitations]");
  if (!box) return;
  box.addEventListener("click", async (event) => {
    const button = event.target.closest("button[data-invitation]");
    if (!button) return;
    const slug = button.dataset.invitation;
    const answer = button.dataset.answer;
    button.disabled = true;
    try {
      await G.request("POST", "/api/invitations/" + encodeURIComponent(slug) + "/" + answer + "/");
      window.location.reload();
    } catch (err) {
      button.disabled = false;
      G.toast(err.message, "error");
    }
  });
})();
