// Typos are caught by the check symbol before anything is counted; wrong
// codes are counted, and past the limit the learner is told how long to wait.
import { expect, test } from "@playwright/test";
import { openHydrated } from "./fixtures";
import { adminApi, createCourse, enterCode, newLearner, shareState, typo, unknownCode } from "./course";

test("a mistyped code is caught locally; 20 wrong codes are throttled with a wait time", async ({ page, context }, testInfo) => {
  const api = await adminApi();
  const course = await createCourse(api);
  await newLearner(context, "typos");
  await openHydrated(page, `/s/${course.slug}`);

  const codeRequests: string[] = [];
  page.on("request", (r) => {
    if (r.url().includes("/api/learner/code")) codeRequests.push(r.url());
  });

  // A typo in the check symbol: refused in the browser, nothing sent.
  await enterCode(page, typo(course.codes[0]));
  await expect(page.locator("#code-error")).toHaveText("This code has a typo: check it and try again.");
  await expect(page.getByLabel("Access code")).toHaveAttribute("aria-invalid", "true");
  await enterCode(page, "ABCD");
  await expect(page.locator("#code-error")).toContainText("12 letters and digits");
  expect(codeRequests).toHaveLength(0);
  await testInfo.attach("typo", { body: await page.screenshot(), contentType: "image/png" });

  // The server refuses a typo the same way, without counting it.
  for (let i = 0; i < 25; i++) {
    const response = await context.request.post(`/api/v1/s/${course.slug}/code`, {
      data: { code: typo(course.codes[0]) },
    });
    expect(response.status()).toBe(422);
    expect((await response.json()).code).toBe("invalid_code");
  }

  // Well-formed but unknown codes count: 20 are answered, the next waits.
  for (let i = 0; i < 20; i++) {
    await enterCode(page, unknownCode());
    await expect(page.locator("#code-error")).toHaveText("This code is not valid.");
    await expect(page.getByRole("button", { name: "Use this code" })).toBeEnabled();
  }
  expect(codeRequests).toHaveLength(20);
  await enterCode(page, unknownCode());
  await expect(page.getByRole("alert")).toContainText("Too many code attempts");
  await expect(page.getByRole("alert")).toContainText(/Try again in \d+ (minutes|seconds)/);
  await testInfo.attach("throttled", { body: await page.screenshot(), contentType: "image/png" });

  // Even the right code waits now; nothing was bound.
  await enterCode(page, course.codes[0]);
  await expect(page.getByRole("alert")).toContainText("Too many code attempts");
  await expect(shareState(page)).toHaveAttribute("data-state", "needs-code");
});
