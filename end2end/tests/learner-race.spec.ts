// Two learners, one code, the same instant: exactly one gets in.
import { expect, test } from "@playwright/test";
import { openHydrated } from "./fixtures";
import { adminApi, createCourse, enterCode, newLearner, shareState, sql } from "./course";

test("two browsers open the same code at once: one gets the content, the other 'already used'", async ({
  browser,
}) => {
  const api = await adminApi();
  const course = await createCourse(api);
  const [code] = course.codes;

  const contexts = await Promise.all([browser.newContext(), browser.newContext()]);
  const pages = await Promise.all(contexts.map((c) => c.newPage()));
  await Promise.all(contexts.map((c, i) => newLearner(c, `race${i}`)));
  // Both enter the code first: entering binds nothing, so both are accepted.
  for (const page of pages) {
    await openHydrated(page, `/s/${course.slug}`);
    await enterCode(page, code);
    await expect(shareState(page)).toHaveAttribute("data-state", "pending");
  }

  // Both open the video at the same time.
  await Promise.all(pages.map((p) => p.goto(`/s/${course.slug}/r/${course.video}`)));
  const outcomes = await Promise.all(
    pages.map(async (page) => ((await page.locator("video.player").count()) > 0 ? "content" : "refused")),
  );
  expect([...outcomes].sort()).toEqual(["content", "refused"]);
  const loser = pages[outcomes.indexOf("refused")];
  await expect(loser.locator(".refused")).toHaveAttribute("data-reason", "code_bound");
  await expect(loser.getByRole("alert")).toContainText("already used by another account");

  expect(
    sql(`SELECT count(*) FROM auth_codes WHERE share_id = '${course.id}' AND bound_principal IS NOT NULL`),
  ).toBe("1");
  expect(sql(`SELECT count(DISTINCT principal_id) FROM access_records WHERE share_id = '${course.id}'`)).toBe("1");
  await Promise.all(contexts.map((c) => c.close()));
});
